/** Prometheus name and text-format helpers for received metric series. */

/** Labels the ingester sets itself; a tag with one of these names is renamed tag_<name>. */
export const RESERVED_LABELS = new Set(['source', 'key', 'namespace', 'job', 'instance', '__name__']);

/** `metric` made a valid Prometheus metric name: [a-zA-Z_][a-zA-Z0-9_]* (colons are for recording rules). */
export function metricName(raw: string): string {
  let name = raw.replace(/[^a-zA-Z0-9_]/g, '_');
  if (!/^[a-zA-Z_]/.test(name)) name = `_${name}`;
  return name;
}

/** A tag name made a valid label name that cannot shadow a label the ingester sets. */
export function tagLabelName(raw: string): string {
  let name = raw.replace(/[^a-zA-Z0-9_]/g, '_');
  if (!/^[a-zA-Z_]/.test(name)) name = `_${name}`;
  // Names starting with __ are reserved for Prometheus internals.
  if (name.startsWith('__')) name = `tag${name}`;
  return RESERVED_LABELS.has(name) ? `tag_${name}` : name;
}

export function escapeLabelValue(value: string): string {
  return /[\\"\n]/.test(value) ? value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : value;
}

export function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}
