/**
 * Operational logs: pino JSON on stderr (the ingester's stdout carries the event stream).
 * Credentials are redacted. A line may quote text from outside (an error's message, a receiver's
 * answer): JSON escapes the C0 controls, and inertJson the rest a terminal acts on (C1, bidi).
 */
import pino, { type Logger } from 'pino';
import { inertJson } from './sender-text.js';

export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.apikey',
  'headers.authorization',
  'headers.apikey',
  '*.password',
  '*.apiKey',
  '*.plain',
];

export function createLogger(level: string, component = 'ingester', destination: number | string = 2): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { component },
      hooks: { streamWrite: inertJson },
    },
    pino.destination({ dest: destination, sync: true }),
  );
}
