/** Metric data point validation (the README's HTTP contract): shape by JSON Schema, numbers and times by code. */
import { Ajv } from 'ajv';
import { asBatch, ErrorCollector, fieldErrors } from '../core/batch.js';
import { epochToMs } from '../core/event.js';

export const MAX_TAGS = 32;
export const MAX_METRIC_NAME = 200;

const NUMERIC_STRING = '^\\s*[-+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*$';

export const dataPointSchema = {
  type: 'object',
  required: ['metric', 'data', 'source'],
  additionalProperties: false,
  properties: {
    metric: { type: 'string', minLength: 1, maxLength: MAX_METRIC_NAME },
    data: { anyOf: [{ type: 'number' }, { type: 'string', pattern: NUMERIC_STRING }] },
    source: { type: 'string', minLength: 1, maxLength: 1024 },
    key: { type: 'string', maxLength: 1024 },
    tags: {
      type: 'object',
      maxProperties: MAX_TAGS,
      propertyNames: { minLength: 1, maxLength: 128 },
      additionalProperties: { anyOf: [{ type: 'string', maxLength: 1024 }, { type: 'number' }, { type: 'boolean' }] },
    },
    utc_offset: { type: 'string', pattern: '^GMT[+-](0[0-9]|1[0-4]):[0-5][0-9]$' },
    time: {
      anyOf: [
        { type: 'number', exclusiveMinimum: 0 },
        { type: 'string', pattern: '^\\s*[0-9]{1,16}(\\.[0-9]{1,9})?\\s*$' },
      ],
    },
    class: { type: 'string', maxLength: 256 },
    description: { type: 'string', maxLength: 1024 },
    unit: { type: 'string', maxLength: 64 },
  },
} as const;

const FIELD_MESSAGES: Record<string, string> = {
  data: 'must be a finite number or a numeric string',
  time: 'must be Unix epoch time in seconds or milliseconds, as a positive number or numeric string',
  utc_offset: 'must look like GMT+HH:MM or GMT-HH:MM',
  tags: 'must be an object of at most 32 tags, names 1..128 characters, values strings (<= 1024), numbers or booleans',
};

const ajv = new Ajv({ allErrors: true, strict: false });
const validateShape = ajv.compile(dataPointSchema);

export interface DataPoint {
  metric: string;
  value: number;
  source: string;
  key: string;
  tags: Record<string, string>;
  /** Sender's time in ms since the epoch (UTC, after utc_offset), when given: an older point never overwrites a newer one. */
  timeMs?: number;
  description?: string;
  unit?: string;
}

/** How far ahead of the receiver's clock a point's `time` may be (clock skew, not the future). */
export const MAX_FUTURE_MS = 5 * 60_000;
/** Default cap on the label text of one series: metric, source, key, tag names and values. */
export const DEFAULT_MAX_LABEL_CHARS = 2048;

export interface DataPointLimits {
  /** Total characters of a point's metric name, source, key, tag names and tag values. */
  maxLabelChars?: number;
  nowMs?: number;
}

export function parseDataPoints(body: unknown, maxPoints: number, limits: DataPointLimits = {}): DataPoint[] {
  const maxLabelChars = limits.maxLabelChars ?? DEFAULT_MAX_LABEL_CHARS;
  const latestMs = (limits.nowMs ?? Date.now()) + MAX_FUTURE_MS;
  const items = asBatch(body, maxPoints, 'data point');
  const collector = new ErrorCollector();
  const out: DataPoint[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as Record<string, unknown>;
    if (!validateShape(item)) {
      collector.add(fieldErrors(i, validateShape.errors, FIELD_MESSAGES));
      continue;
    }
    const value = typeof item.data === 'number' ? item.data : Number((item.data as string).trim());
    if (!Number.isFinite(value)) {
      collector.add([{ index: i, field: 'data', message: FIELD_MESSAGES.data as string }]);
      continue;
    }
    const labelChars = labelLength(item);
    if (labelChars > maxLabelChars) {
      collector.add([
        {
          index: i,
          field: 'tags',
          message: `the labels of this point (metric, source, key, tag names and values) total ${labelChars} characters; the limit is ${maxLabelChars} (limits.maxSeriesLabelChars)`,
        },
      ]);
      continue;
    }
    const point = toPoint(item, value);
    if (point.timeMs !== undefined && !(point.timeMs <= latestMs)) {
      collector.add([
        {
          index: i,
          field: 'time',
          message: `is more than ${MAX_FUTURE_MS / 60_000} minutes in the future (by the receiver's clock), or not a finite time`,
        },
      ]);
      continue;
    }
    if (collector.count === 0) out.push(point);
  }
  collector.throwIfAny('data point', items.length);
  return out;
}

function labelLength(item: Record<string, unknown>): number {
  let n =
    (item.metric as string).length + (item.source as string).length + ((item.key as string | undefined)?.length ?? 0);
  const tags = item.tags as Record<string, unknown> | undefined;
  if (tags) for (const name of Object.keys(tags)) n += name.length + String(tags[name]).length;
  return n;
}

function toPoint(item: Record<string, unknown>, value: number): DataPoint {
  const tags: Record<string, string> = Object.create(null);
  const given = item.tags as Record<string, string | number | boolean> | undefined;
  if (given) for (const name of Object.keys(given)) tags[name] = String(given[name]);
  const point: DataPoint = {
    metric: item.metric as string,
    value,
    source: item.source as string,
    key: (item.key as string | undefined) ?? '',
    tags,
  };
  if (item.time !== undefined)
    point.timeMs = epochToMs(item.time as number | string) - utcOffsetMs(item.utc_offset as string | undefined);
  if (typeof item.description === 'string') point.description = item.description;
  if (typeof item.unit === 'string') point.unit = item.unit;
  return point;
}

/** `time` is read in the zone `utc_offset` names (GMT±HH:MM); subtracting the offset gives UTC. */
function utcOffsetMs(offset: string | undefined): number {
  if (offset === undefined) return 0;
  const sign = offset[3] === '-' ? -1 : 1;
  return sign * (Number(offset.slice(4, 6)) * 60 + Number(offset.slice(7, 9))) * 60_000;
}
