/**
 * What every component's command line shares: listen addresses, YAML config files, and the one
 * error type for configuration mistakes (reported without a stack trace, exit code 2).
 */
import { readFileSync } from 'node:fs';
import { parsePlainYaml } from './plain-yaml.js';
import { yamlPackage } from './yaml-package.js';

export interface Listen {
  host: string;
  port: number;
}

export class ConfigError extends Error {
  readonly code = 'INTAKE_CONFIG';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConfigError';
  }
}

/** "host:port", "[v6]:port" or ":port" (all interfaces). */
export function parseListen(value: string, what: string): Listen {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535)
    throw new ConfigError(
      `${what}: expected HOST:PORT (e.g. 127.0.0.1:8080 or [::1]:8080), got ${JSON.stringify(value)}`,
    );
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

export function readYamlFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  // Most config files are plain YAML, read in a fraction of the time (a file of 20,000 routes).
  const plain = parsePlainYaml(text);
  if (plain) return plain.value ?? {};
  try {
    return yamlPackage().parse(text, { maxAliasCount: 100 }) ?? {};
  } catch (err) {
    // The parser's message quotes the offending lines, which may hold passwords: give the position only.
    const e = err as { code?: string; linePos?: Array<{ line: number; col: number }> };
    const at = e.linePos?.[0] ? ` at line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '';
    throw new ConfigError(`${path} is not valid YAML${at}${e.code ? ` (${e.code})` : ''}`);
  }
}
