/**
 * A team's destination (a `Destination` resource, published by the operator as a document:
 * api/destination-document.ts) turned into the settings of a platform destination, so that it is
 * delivered through the same dispatcher, bus and outbox paths. The document's schema is the
 * settings file's with credentials inline (api/destination-document.ts, which the operator checks
 * too), and the settings file's checks run on it (resolveDestinations), so a team destination
 * can hold nothing a platform one could not.
 *
 * The outgoing clients read credentials from files (outbound/credentials.ts); a team's are written
 * to a private directory (TeamCredentialFiles: mode 0700, files 0600), a fresh one for each
 * version of the document, and removed with it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../../common/config-files.js';
import {
  destinationDocumentProblems,
  teamDestinationName,
  type DestinationDocument,
  type InlineAuth,
} from '../../../api/destination-document.js';
import { resolveDestinations, type DestinationFile, type DestinationSettings } from '../settings.js';

/** Where a team destination's credentials are written; `field` is one of password, token, ca, cert, key. */
export type WriteCredential = (field: 'password' | 'token' | 'ca' | 'cert' | 'key', text: string) => string;

/** Checks a document (its schema, then the settings file's rules); throws ConfigError naming the problems. */
export function checkDestinationDocument(doc: unknown): DestinationDocument {
  const problems = destinationDocumentProblems(doc);
  if (problems.length > 0) throw new ConfigError(problems.join('; '));
  return doc as DestinationDocument;
}

/**
 * The settings of a checked document. `write` puts a credential where the client reads it (a
 * check alone passes one that writes nothing). Throws ConfigError as the settings file would.
 */
export function teamDestinationSettings(doc: DestinationDocument, write: WriteCredential): DestinationSettings {
  const file: DestinationFile = { name: doc.name };
  if (doc.alertmanager) file.alertmanager = { ...withoutAuth(doc.alertmanager), ...authFiles(doc.alertmanager, write) };
  if (doc.http) file.http = { ...withoutAuth(doc.http), ...authFiles(doc.http, write) };
  if (doc.delivery) file.delivery = doc.delivery;
  if (doc.circuitBreaker) file.circuitBreaker = doc.circuitBreaker;
  if (doc.rateLimit) file.rateLimit = doc.rateLimit;
  if (doc.autoPause) file.autoPause = doc.autoPause;
  const [settings] = resolveDestinations([file]) as [DestinationSettings];
  return {
    ...settings,
    name: teamDestinationName(doc.namespace, doc.name),
    // Integrations that name none are delivered to the platform's defaults, never a team's.
    default: false,
    namespace: doc.namespace,
    ...(doc.suspend ? { suspend: true } : {}),
  };
}

function withoutAuth<T extends InlineAuth>(block: T): Omit<T, keyof InlineAuth> {
  const { basicAuth: _b, bearerToken: _t, tls: _tls, ...rest } = block;
  return rest;
}

type AuthFileFields = Pick<NonNullable<DestinationFile['http']>, 'basicAuth' | 'bearerTokenFile' | 'tls'>;

function authFiles(a: InlineAuth, write: WriteCredential): AuthFileFields {
  const out: AuthFileFields = {};
  if (a.basicAuth)
    out.basicAuth = { username: a.basicAuth.username, passwordFile: write('password', a.basicAuth.password) };
  if (a.bearerToken !== undefined) out.bearerTokenFile = write('token', a.bearerToken);
  if (a.tls) {
    const tls: NonNullable<AuthFileFields['tls']> = {};
    if (a.tls.ca !== undefined) tls.caFile = write('ca', a.tls.ca);
    if (a.tls.cert !== undefined) tls.certFile = write('cert', a.tls.cert);
    if (a.tls.key !== undefined) tls.keyFile = write('key', a.tls.key);
    if (a.tls.insecureSkipVerify) tls.insecureSkipVerify = true;
    out.tls = tls;
  }
  return out;
}

/**
 * The private directory of team destinations' credential files: a directory per version of a
 * destination's document (the clients cache what they read by path), removed when the version is
 * replaced or the destination removed, and all of it when the process stops.
 */
export class TeamCredentialFiles {
  /** Made on the first credential written (none while no team destination has credentials). */
  private root?: string;
  private next = 0;

  /** `parent`: the temporary directory (in the chart's pods, an in-memory volume at /tmp). */
  constructor(private readonly parent = tmpdir()) {}

  /**
   * One version of a destination's credentials: `write` puts a file in its own directory (made on
   * the first), `remove` takes the directory away, `dir` names it (undefined before a write).
   */
  version(): { write: WriteCredential; remove: () => void; dir: () => string | undefined } {
    const n = this.next++;
    let dir: string | undefined;
    return {
      write: (field, text) => {
        if (dir === undefined) {
          this.root ??= mkdtempSync(join(this.parent, 'intake-destination-credentials-'));
          dir = join(this.root, String(n));
          mkdirSync(dir, { mode: 0o700 });
        }
        const path = join(dir, field);
        writeFileSync(path, text, { mode: 0o600 });
        return path;
      },
      remove: () => {
        if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      },
      dir: () => dir,
    };
  }

  close(): void {
    if (this.root !== undefined) rmSync(this.root, { recursive: true, force: true });
  }
}
