/**
 * Credentials of intake's outgoing requests (remote write, destinations) come from files, mounted
 * Secrets in Kubernetes. They are read again after 30 s, so a rotated Secret is picked up without
 * a restart, and never reach a log.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../common/config-files.js';

const FILE_CACHE_MS = 30_000;

export interface AuthFiles {
  basicAuth?: { username: string; passwordFile: string };
  bearerTokenFile?: string;
}

/** TLS of an outgoing connection: the CA to verify the receiver, a client certificate; read once at startup. */
export interface TlsFiles {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  insecureSkipVerify?: boolean;
}

export type OutboundAuth = AuthFiles & { tls?: TlsFiles };

export class CredentialFiles {
  private readonly files = new Map<string, { value: string; readAtMs: number }>();

  /** `where` names the setting in errors (e.g. `remoteWrite`). */
  constructor(private readonly where: string) {}

  /** The Authorization header value, or undefined without credentials; throws ConfigError when a file cannot be read. */
  authorization(auth: AuthFiles): string | undefined {
    if (auth.bearerTokenFile) return `Bearer ${this.read(auth.bearerTokenFile)}`;
    if (auth.basicAuth)
      return `Basic ${Buffer.from(`${auth.basicAuth.username}:${this.read(auth.basicAuth.passwordFile)}`).toString('base64')}`;
    return undefined;
  }

  private read(path: string): string {
    const now = Date.now();
    const cached = this.files.get(path);
    if (cached && now - cached.readAtMs < FILE_CACHE_MS) return cached.value;
    let value: string;
    try {
      value = readFileSync(path, 'utf8').trim();
    } catch (err) {
      throw new ConfigError(`${this.where}: cannot read credential file ${path}: ${(err as Error).message}`);
    }
    this.files.set(path, { value, readAtMs: now });
    return value;
  }
}

/** A TLS file (CA, certificate, key) read once at startup. */
export function readTlsFile(path: string, where: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new ConfigError(`${where}.tls: cannot read ${path}: ${(err as Error).message}`);
  }
}
