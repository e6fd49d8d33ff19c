/**
 * The JetStream stream the sink publishes to: the configuration intake creates, and the checks an
 * existing stream must pass (createStream: false, or a stream someone else made) with a message
 * that says exactly what is wrong.
 */
import {
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { MIN_DUPLICATE_WINDOW_SECONDS, type JetStreamSettings } from './handoff-config.js';

/** The wildcard every subject `<prefix>.<namespace>.<integration>` (and replay subject) falls under. */
export const subjectsOf = (prefix: string): string => `${prefix}.>`;

/** The stream's subjects: every subject intake publishes events on falls under one of them. */
export const eventStreamSubjects = (prefix: string): string[] => [subjectsOf(prefix)];

/**
 * Where an event on the stream belongs, as its subject says: `<prefix>.<namespace>.<integration>`,
 * then the destinations it goes to when that was decided before it was published:
 *   - `.<destination>`: that destination only (`onlyFor`): a replayed dead letter, or events whose
 *     routing rules chose one destination;
 *   - `._.<destination>.<destination>...`: events whose routing rules chose several (`decided`);
 *   - `._`: events a rule dropped (`decided` empty).
 * `_` is never a destination's name. Deliveries choose messages by the subject, so they need not
 * parse or route the events.
 */
export interface EventSubject {
  namespace: string;
  integration: string;
  onlyFor?: string;
  /** The destinations routing rules chose (several, or none); one is written as `onlyFor`. */
  decided?: readonly string[];
}

/** The token before the destinations routing rules chose (none: a drop rule): never a destination's name. */
const DECIDED = '_';

export function eventSubject(prefix: string, s: EventSubject): string {
  const base = `${prefix}.${subjectToken(s.namespace)}.${subjectToken(s.integration)}`;
  if (s.onlyFor !== undefined) return `${base}.${subjectToken(s.onlyFor)}`;
  if (s.decided === undefined) return base;
  if (s.decided.length === 1) return `${base}.${subjectToken(s.decided[0] as string)}`;
  return [base, DECIDED, ...s.decided.map(subjectToken)].join('.');
}

/**
 * The subject read back; undefined when it is not one eventSubject() makes from valid names (then
 * the event itself says where it belongs). Namespace, integration and destination names never
 * hold a dot, so the tokens are the names.
 */
export function readEventSubject(prefix: string, subject: string): EventSubject | undefined {
  if (!subject.startsWith(prefix) || subject.charCodeAt(prefix.length) !== 0x2e) return undefined;
  const tokens = subject.slice(prefix.length + 1).split('.');
  if (tokens.length < 2) return undefined;
  const [namespace, integration, onlyFor] = tokens as [string, string, string | undefined];
  if (onlyFor === undefined) return { namespace, integration };
  if (onlyFor === DECIDED) return { namespace, integration, decided: tokens.slice(3) };
  if (tokens.length === 3) return { namespace, integration, onlyFor };
  return undefined;
}

/** Subject tokens cannot hold dots, wildcards or spaces; valid Kubernetes and route names pass unchanged. */
export function subjectToken(value: string): string {
  return /^[A-Za-z0-9_-]+$/.test(value) ? value : value.replace(/[^A-Za-z0-9_-]/g, '_') || '_';
}

export class StreamConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StreamConfigError';
  }
}

export function wantedStream(s: JetStreamSettings): Partial<StreamConfig> & { name: string } {
  const c = s.streamConfig;
  return {
    name: s.stream,
    subjects: eventStreamSubjects(s.subjectPrefix),
    retention: RetentionPolicy.Limits,
    storage: c.storage === 'memory' ? StorageType.Memory : StorageType.File,
    // A full stream must refuse publishes (then the spool or a 503 tells the sender), never drop
    // the oldest events silently.
    discard: DiscardPolicy.New,
    duplicate_window: nanos(c.duplicateWindowSeconds * 1000),
    num_replicas: c.replicas,
    max_bytes: c.maxBytes,
    max_msgs: c.maxMsgs,
    max_age: nanos(c.maxAgeSeconds * 1000),
  };
}

/** Everything about an existing stream that breaks intake's guarantees; empty when it is fine. */
export function streamProblems(
  config: Pick<StreamConfig, 'subjects' | 'discard' | 'duplicate_window'>,
  subjectPrefix: string,
): string[] {
  const problems: string[] = [];
  const subjects = config.subjects ?? [];
  const missing = eventStreamSubjects(subjectPrefix).filter(
    (needed) => !subjects.some((s) => subjectCovers(s, needed)),
  );
  if (missing.length > 0) {
    problems.push(
      `its subjects ${JSON.stringify(subjects)} do not cover ${missing.join(' and ')} (events are published to ${subjectPrefix}.<namespace>.<integration>)`,
    );
  }
  if (config.discard !== DiscardPolicy.New) {
    problems.push(
      `its discard policy is ${JSON.stringify(config.discard ?? 'old')}; intake needs "new" so a full stream refuses events instead of dropping the oldest`,
    );
  }
  const windowSeconds = (config.duplicate_window ?? 0) / 1e9;
  if (windowSeconds < MIN_DUPLICATE_WINDOW_SECONDS) {
    problems.push(
      `its duplicate_window is ${windowSeconds}s; intake needs at least ${MIN_DUPLICATE_WINDOW_SECONDS}s so retried and replayed events are stored once`,
    );
  }
  return problems;
}

/** Whether subject filter `pattern` matches every subject `wanted` (which may end in `>`) matches. */
export function subjectCovers(pattern: string, wanted: string): boolean {
  const p = pattern.split('.');
  const w = wanted.split('.');
  for (let i = 0; i < w.length; i++) {
    const pt = p[i];
    if (pt === '>') return true;
    if (pt === undefined || w[i] === '>') return false;
    if (pt !== '*' && pt !== w[i]) return false;
  }
  return p.length === w.length;
}

/**
 * An existing stream's subjects with those intake publishes on added where none covers them yet
 * (adding a subject an existing one already covers makes the server refuse the update).
 */
export function mergedSubjects(existing: readonly string[], subjectPrefix: string): string[] {
  const added = eventStreamSubjects(subjectPrefix).filter((needed) => !existing.some((s) => subjectCovers(s, needed)));
  return [...existing, ...added];
}

/** The limits intake manages on a stream it owns (createStream: true): how far they differ from streamConfig. */
export function limitChanges(
  current: Pick<StreamConfig, 'max_age' | 'max_bytes' | 'max_msgs'>,
  wanted: Pick<StreamConfig, 'max_age' | 'max_bytes' | 'max_msgs'>,
): string[] {
  const changes: string[] = [];
  for (const k of ['max_age', 'max_bytes', 'max_msgs'] as const) {
    // The server reports "no limit" as 0 for max_age and -1 for the others.
    const norm = (v: number | undefined): number => (v === undefined || v <= 0 ? 0 : v);
    if (norm(current[k]) !== norm(wanted[k])) changes.push(`${k} ${current[k] ?? 'unset'} -> ${wanted[k]}`);
  }
  return changes;
}

/**
 * Creates or checks the stream; throws StreamConfigError naming every problem. With createStream,
 * an existing stream is also brought to the configured limits (a changed streamConfig takes
 * effect): returns what was changed, for the log.
 */
export async function ensureStream(jsm: JetStreamManager, s: JetStreamSettings): Promise<string[]> {
  const wanted = wantedStream(s);
  if (s.createStream) {
    try {
      await jsm.streams.add(wanted);
      return [];
    } catch (err) {
      // Exists with other settings: fine if they keep intake's guarantees; else bring them in line.
      const info = await jsm.streams.info(s.stream).catch(() => undefined);
      if (!info) throw new StreamConfigError(`stream ${s.stream} could not be created: ${(err as Error).message}`);
      const problems = streamProblems(info.config, s.subjectPrefix);
      const changes = limitChanges(info.config, wanted as StreamConfig);
      if (problems.length === 0 && changes.length === 0) return [];
      const merged = {
        ...info.config,
        subjects: mergedSubjects(info.config.subjects ?? [], s.subjectPrefix),
        discard: DiscardPolicy.New,
        duplicate_window: Math.max(info.config.duplicate_window ?? 0, wanted.duplicate_window as number),
        max_age: wanted.max_age as number,
        max_bytes: wanted.max_bytes as number,
        max_msgs: wanted.max_msgs as number,
      };
      try {
        await jsm.streams.update(s.stream, merged);
        return [...problems, ...changes];
      } catch (updateErr) {
        // Limits the server will not take (a max_bytes beyond its storage) are not worth refusing events for.
        if (problems.length === 0)
          return [`updating the limits (${changes.join(', ')}) failed: ${(updateErr as Error).message}`];
        throw new StreamConfigError(
          `stream ${s.stream} exists, ${problems.join('; ')}, and updating it failed: ${(updateErr as Error).message}`,
        );
      }
    }
  }
  let info;
  try {
    info = await jsm.streams.info(s.stream);
  } catch (err) {
    throw new StreamConfigError(
      `stream ${s.stream} is not usable (createStream is false, so intake does not create it): ${(err as Error).message}`,
    );
  }
  const problems = streamProblems(info.config, s.subjectPrefix);
  if (problems.length > 0) throw new StreamConfigError(`stream ${s.stream} is misconfigured: ${problems.join('; ')}`);
  return [];
}
