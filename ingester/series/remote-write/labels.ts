/**
 * The label set a data point is written with: the same labels as /metrics/ingested (one rule, in
 * series-store.ts: key, namespace from the API key, source, sanitised tags) plus `__name__`,
 * sorted by name as the spec requires. Labels with an empty value are left out: the spec forbids
 * them, and in PromQL an empty label and a missing label are the same series.
 */
import { hash } from 'node:crypto';
import type { DataPoint } from '../data-points.js';
import { metricName } from '../prom-names.js';
import { seriesLabels } from '../series-store.js';
import type { Labels } from './wire.js';

export function wireLabels(namespace: string, point: DataPoint): Array<[string, string]> {
  const name: [string, string] = ['__name__', metricName(point.metric)];
  const labels: Array<[string, string]> = [];
  // seriesLabels are sorted and never named __name__ (tags starting with __ are renamed), so
  // __name__ goes in before the first name above it: uppercase tag names sort before it.
  let named = false;
  for (const label of seriesLabels(namespace, point)) {
    if (!named && label[0] > '__name__') {
      labels.push(name);
      named = true;
    }
    if (label[1] !== '') labels.push(label);
  }
  if (!named) labels.push(name);
  return labels;
}

/** Keys longer than this are replaced by their digest: V8 hashes very long strings by length alone. */
const MAX_PLAIN_KEY = 1024;

/** A map key for a label set; length-prefixed, so no name or value can make two sets collide. */
export function seriesKey(labels: Labels): string {
  let key = '';
  for (const [name, value] of labels) key += `${name.length}:${name}${value.length}:${value}`;
  return key.length > MAX_PLAIN_KEY ? hash('sha256', key, 'base64') : key;
}
