/** Operational logs: pino JSON on stderr (the ingester's stdout carries the event stream). Credentials are redacted. */
import pino, { type Logger } from 'pino';

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
    { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, base: { component } },
    pino.destination({ dest: destination, sync: true }),
  );
}
