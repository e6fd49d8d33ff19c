/**
 * The event inspector's bounds (config file block `inspector:`; docs/inspector.md). Which
 * integrations are inspected is theirs to say (spec.inspect); how much any of them may keep, and
 * for how long, is the platform's.
 */
import { ConfigError } from '../../common/config-files.js';
import { parseDuration } from '../../common/duration.js';

export interface InspectorSettings {
  /** Bytes of a request's body kept; the rest is cut and the capture marked so. */
  maxBodyBytes: number;
  /** Bytes of a request's mapped events (as JSON) kept; events past them are left out, and the capture marked so. */
  maxEventsBytes: number;
  /** A capture is kept this long at most. */
  maxAgeMs: number;
  /** Bytes all captures hold at most (memory without the bus; with it, on the stream, for all replicas). */
  maxBytes: number;
  /** Bytes one namespace's captures hold at most (with the bus: for all replicas together). */
  maxBytesPerNamespace: number;
  /** With the bus: the stream that keeps the captures, and its subjects' prefix. */
  stream: string;
  subjectPrefix: string;
}

export const DEFAULT_INSPECTOR: InspectorSettings = {
  maxBodyBytes: 16 * 1024,
  maxEventsBytes: 64 * 1024,
  maxAgeMs: 3_600_000,
  maxBytes: 64 * 1024 * 1024,
  maxBytesPerNamespace: 8 * 1024 * 1024,
  stream: 'INTAKE_INSPECT',
  subjectPrefix: 'intake.inspect',
};

const bytes = (min: number) => ({ type: 'integer', minimum: min }) as const;

export const inspectorSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    maxBodyBytes: bytes(0),
    maxEventsBytes: bytes(0),
    maxAge: { type: 'string' },
    maxBytes: bytes(65536),
    maxBytesPerNamespace: bytes(65536),
    stream: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,255}$' },
    subjectPrefix: { type: 'string', pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$' },
  },
} as const;

export interface InspectorFile {
  maxBodyBytes?: number;
  maxEventsBytes?: number;
  maxAge?: string;
  maxBytes?: number;
  maxBytesPerNamespace?: number;
  stream?: string;
  subjectPrefix?: string;
}

/** The block as given over the defaults; a share larger than its whole, or an age of zero, is refused. */
export function resolveInspector(f: InspectorFile | undefined): InspectorSettings {
  const { maxAge, ...rest } = f ?? {};
  const s: InspectorSettings = { ...DEFAULT_INSPECTOR, ...rest };
  if (maxAge !== undefined) {
    try {
      s.maxAgeMs = parseDuration(maxAge);
    } catch (err) {
      throw new ConfigError(`inspector.maxAge: ${(err as Error).message}`);
    }
    if (s.maxAgeMs < 1000) throw new ConfigError('inspector.maxAge must be at least 1s');
  }
  if (f?.maxBytesPerNamespace === undefined) s.maxBytesPerNamespace = Math.min(s.maxBytesPerNamespace, s.maxBytes);
  if (s.maxBytesPerNamespace > s.maxBytes)
    throw new ConfigError(
      `inspector.maxBytesPerNamespace (${s.maxBytesPerNamespace}) must not exceed inspector.maxBytes (${s.maxBytes})`,
    );
  return s;
}
