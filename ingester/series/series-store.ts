/**
 * Received metric series, exposed on the admin port at /metrics/ingested (the README's HTTP contract).
 * Every series is a gauge holding its last value. Memory is bounded: a global cap and a
 * per-namespace cap on active series, a cap on the label text of one series (checked with the
 * data points), and a TTL after which an idle series drops out. So the store holds at most
 * maxSeriesTotal x (label text, escaped) bytes, and the exposition is streamed in chunks rather
 * than built as one string.
 *
 * Series are keyed by a SHA-256 digest of their canonical label text, not the text itself: V8
 * hashes long strings by their length alone, so long label texts of equal length would all
 * collide and every lookup would compare them character by character.
 */
import { hash } from 'node:crypto';
import type { DataPoint } from './data-points.js';
import { seriesLimit } from '../core/errors.js';
import { escapeHelp, escapeLabelValue, metricName, tagLabelName } from './prom-names.js';

export interface SeriesStoreOptions {
  ttlMs: number;
  maxSeriesTotal: number;
  maxSeriesPerNamespace: number;
  now?: () => number;
}

interface Series {
  readonly namespace: string;
  /** Pre-rendered `{a="b",...}` so exposition is concatenation only. */
  readonly labelText: string;
  value: number;
  timeMs: number;
  lastSeenMs: number;
}

interface Family {
  /** Series by digest of their label text. */
  readonly series: Map<string, Series>;
  /** Per namespace: its active series in this family and the HELP text it gave, if any. */
  readonly namespaces: Map<string, { series: number; help: string }>;
}

interface PreparedPoint {
  family: string;
  labelText: string;
  key: string;
  point: DataPoint;
}

const MAX_HELP = 1024;
/** Sweeping walks every series; under pressure at the cap, do it at most this often. */
const MIN_SWEEP_INTERVAL_MS = 1000;
/** The exposition is produced in chunks of about this size, yielding the event loop between them. */
const CHUNK_CHARS = 256 * 1024;

export class SeriesStore {
  private readonly families = new Map<string, Family>();
  private readonly perNamespace = new Map<string, number>();
  private total = 0;
  private lastSweepMs = 0;
  private readonly now: () => number;

  constructor(private readonly options: SeriesStoreOptions) {
    for (const key of ['ttlMs', 'maxSeriesTotal', 'maxSeriesPerNamespace'] as const) {
      if (!Number.isInteger(options[key]) || options[key] <= 0)
        throw new RangeError(`SeriesStore: ${key} must be a positive integer`);
    }
    this.now = options.now ?? Date.now;
  }

  get activeSeries(): number {
    return this.total;
  }

  namespaceSeries(): ReadonlyMap<string, number> {
    return this.perNamespace;
  }

  /**
   * Writes a whole batch for one namespace, or nothing: if the new series it would create pass a
   * cap, it throws a 429 naming the cap and no point is applied.
   */
  write(namespace: string, points: readonly DataPoint[], namespaceCap = this.options.maxSeriesPerNamespace): void {
    const prepared = points.map((point) => prepare(namespace, point));
    let fresh = this.countNew(prepared);
    if (fresh > 0 && this.wouldExceed(namespace, fresh, namespaceCap) && this.sweepIfDue()) {
      fresh = this.countNew(prepared);
    }
    if (fresh > 0) this.checkCaps(namespace, fresh, namespaceCap);
    const nowMs = this.now();
    for (const p of prepared) this.apply(namespace, p, nowMs);
  }

  private countNew(prepared: readonly PreparedPoint[]): number {
    const seen = new Set<string>();
    for (const p of prepared) {
      if (!this.families.get(p.family)?.series.has(p.key)) seen.add(`${p.family}\0${p.key}`);
    }
    return seen.size;
  }

  private wouldExceed(namespace: string, fresh: number, namespaceCap: number): boolean {
    return (
      (this.perNamespace.get(namespace) ?? 0) + fresh > namespaceCap || this.total + fresh > this.options.maxSeriesTotal
    );
  }

  private checkCaps(namespace: string, fresh: number, namespaceCap: number): void {
    const inNamespace = this.perNamespace.get(namespace) ?? 0;
    if (inNamespace + fresh > namespaceCap) {
      throw seriesLimit(
        `series cap reached for namespace ${namespace}: ${inNamespace} active series, cap ${namespaceCap} (per-namespace maxSeries); ` +
          `this request would add ${fresh} new series. Existing series keep updating; idle series expire after ${this.options.ttlMs / 1000}s`,
      );
    }
    if (this.total + fresh > this.options.maxSeriesTotal) {
      throw seriesLimit(
        `global series cap reached: ${this.total} active series, cap ${this.options.maxSeriesTotal} (limits.maxSeriesTotal); ` +
          `this request would add ${fresh} new series. Existing series keep updating`,
      );
    }
  }

  private apply(namespace: string, p: PreparedPoint, nowMs: number): void {
    let family = this.families.get(p.family);
    if (!family) {
      family = { series: new Map(), namespaces: new Map() };
      this.families.set(p.family, family);
    }
    let inFamily = family.namespaces.get(namespace);
    if (!inFamily) {
      inFamily = { series: 0, help: '' };
      family.namespaces.set(namespace, inFamily);
    }
    if (p.point.description !== undefined) inFamily.help = p.point.description.slice(0, MAX_HELP);
    const existing = family.series.get(p.key);
    const timeMs = p.point.timeMs ?? nowMs;
    if (existing) {
      existing.lastSeenMs = nowMs;
      // An older point (by the sender's clock) does not overwrite a newer one.
      if (timeMs >= existing.timeMs) {
        existing.value = p.point.value;
        existing.timeMs = timeMs;
      }
      return;
    }
    family.series.set(p.key, { namespace, labelText: p.labelText, value: p.point.value, timeMs, lastSeenMs: nowMs });
    inFamily.series++;
    this.perNamespace.set(namespace, (this.perNamespace.get(namespace) ?? 0) + 1);
    this.total++;
  }

  /** Drops series idle longer than the TTL. Returns true if it ran. */
  sweep(): boolean {
    const nowMs = this.now();
    this.lastSweepMs = nowMs;
    const cutoff = nowMs - this.options.ttlMs;
    for (const [name, family] of this.families) {
      for (const [key, s] of family.series) {
        if (s.lastSeenMs >= cutoff) continue;
        family.series.delete(key);
        this.total--;
        const inFamily = family.namespaces.get(s.namespace);
        if (inFamily && --inFamily.series === 0) family.namespaces.delete(s.namespace);
        const left = (this.perNamespace.get(s.namespace) ?? 1) - 1;
        if (left === 0) this.perNamespace.delete(s.namespace);
        else this.perNamespace.set(s.namespace, left);
      }
      if (family.series.size === 0) this.families.delete(name);
    }
    return true;
  }

  private sweepIfDue(): boolean {
    return this.now() - this.lastSweepMs >= MIN_SWEEP_INTERVAL_MS && this.sweep();
  }

  /**
   * Prometheus text exposition format 0.0.4 in chunks of about CHUNK_CHARS; idle series past the
   * TTL are left out. No chunk grows with the number of series, so a scrape of any size costs
   * bounded memory, and a consumer that awaits between chunks lets other requests run.
   */
  *chunks(): Generator<string> {
    const cutoff = this.now() - this.options.ttlMs;
    let chunk = '';
    for (const [name, family] of this.families) {
      let header = `${helpLine(name, family)}# TYPE ${name} gauge\n`;
      for (const s of family.series.values()) {
        if (s.lastSeenMs < cutoff) continue;
        chunk += `${header}${name}${s.labelText} ${s.value}\n`;
        header = '';
        if (chunk.length >= CHUNK_CHARS) {
          yield chunk;
          chunk = '';
        }
      }
    }
    if (chunk !== '') yield chunk;
  }

  /** The whole exposition as one string (tests and small stores; the admin server streams chunks()). */
  render(): string {
    return [...this.chunks()].join('');
  }
}

/**
 * A family's HELP is shown only when every namespace that gave one agrees: one tenant's
 * description never appears above another tenant's series.
 */
function helpLine(name: string, family: Family): string {
  let help = '';
  for (const { help: given } of family.namespaces.values()) {
    if (given === '') continue;
    if (help !== '' && given !== help) return '';
    help = given;
  }
  return help === '' ? '' : `# HELP ${name} ${escapeHelp(help)}\n`;
}

/**
 * A point's series labels without the name, sorted by name, each name once: the one label rule for
 * exposition and remote write.
 */
export function seriesLabels(namespace: string, point: DataPoint): Array<[string, string]> {
  const labels: Array<[string, string]> = [
    ['key', point.key],
    ['namespace', namespace],
    ['source', point.source],
  ];
  for (const tag of Object.keys(point.tags)) labels.push([tagLabelName(tag), point.tags[tag] as string]);
  labels.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  // Two tags that sanitise to one name: the first (in sorted order) wins, as a label may appear once.
  return labels.filter((label, i) => i === 0 || label[0] !== (labels[i - 1] as [string, string])[0]);
}

function prepare(namespace: string, point: DataPoint): PreparedPoint {
  let labelText = '{';
  for (const [name, value] of seriesLabels(namespace, point)) {
    if (labelText !== '{') labelText += ',';
    labelText += `${name}="${escapeLabelValue(value)}"`;
  }
  labelText += '}';
  return { family: metricName(point.metric), labelText, key: hash('sha256', labelText, 'base64'), point };
}
