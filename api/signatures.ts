/**
 * Signed senders (docs/signatures.md): what each scheme signs, where it puts the signature and its
 * timestamp, and what form its secret takes. One definition, imported by the operator (generating
 * and checking secrets, checking a spec) and by the ingester (compiling a route into the rule that
 * ingester/auth/signature-check.ts verifies).
 *
 * Every scheme is a case of one rule: an HMAC (SHA-256 or SHA-512) over a signed content made of
 * literal text, the message id, the timestamp and the body, written in hex or base64 after a
 * prefix, in one header that may list several signatures.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { AuthenticationMode, Route, RouteSignature, SignatureScheme } from './route-document.js';

export const SIGNATURE_SCHEMES: readonly SignatureScheme[] = [
  'standard-webhooks',
  'github',
  'grafana',
  'slack',
  'pagerduty',
  'hmac',
];

/** How far a signed timestamp may be from the ingester's clock, either way, unless the route says. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Grafana's default signature header (grafana/alerting http/hmac.go); its contact point can name another. */
export const GRAFANA_SIGNATURE_HEADER = 'X-Grafana-Alerting-Signature';

export type SignedPart = 'id' | 'timestamp' | 'body' | { literal: string };

export interface SignatureRule {
  scheme: SignatureScheme;
  /** Header names, in lower case. */
  header: string;
  timestampHeader?: string;
  idHeader?: string;
  /** The header may list several signatures, separated by this (a sender signing with both secrets during a rotation). */
  separator?: ' ' | ',';
  /** Text before each signature; a listed signature with another prefix (another version) is ignored. */
  prefix: string;
  algorithm: 'sha256' | 'sha512';
  encoding: 'hex' | 'base64';
  /** What is signed, in order. */
  signed: readonly SignedPart[];
  toleranceMs: number;
}

const BODY_ONLY: readonly SignedPart[] = ['body'];

/** The rule a route's signature settings describe (the settings passed validateRoute); the secrets play no part. */
export function ruleOf(sig: Omit<RouteSignature, 'secrets'>): SignatureRule {
  const toleranceMs = (sig.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS) * 1000;
  const base = { scheme: sig.scheme, toleranceMs, algorithm: 'sha256', encoding: 'hex', prefix: '' } as const;
  switch (sig.scheme) {
    case 'standard-webhooks':
      // standard-webhooks spec: `v1,<base64>` signatures, space-separated, over `{id}.{timestamp}.{body}`.
      return {
        ...base,
        header: 'webhook-signature',
        idHeader: 'webhook-id',
        timestampHeader: 'webhook-timestamp',
        separator: ' ',
        prefix: 'v1,',
        encoding: 'base64',
        signed: ['id', { literal: '.' }, 'timestamp', { literal: '.' }, 'body'],
      };
    case 'github':
      return { ...base, header: 'x-hub-signature-256', prefix: 'sha256=', signed: BODY_ONLY };
    case 'slack':
      return {
        ...base,
        header: 'x-slack-signature',
        timestampHeader: 'x-slack-request-timestamp',
        prefix: 'v0=',
        signed: [{ literal: 'v0:' }, 'timestamp', { literal: ':' }, 'body'],
      };
    case 'pagerduty':
      // PagerDuty webhooks v3: `v1=<hex>`, comma-separated while a secret is being rotated.
      return { ...base, header: 'x-pagerduty-signature', separator: ',', prefix: 'v1=', signed: BODY_ONLY };
    case 'grafana': {
      // grafana/alerting http/hmac.go: hex HMAC-SHA256 of the body, or of `{timestamp}:{body}` with a timestamp header.
      const timestampHeader = sig.timestampHeader?.toLowerCase();
      return {
        ...base,
        header: (sig.header ?? GRAFANA_SIGNATURE_HEADER).toLowerCase(),
        ...(timestampHeader ? { timestampHeader } : {}),
        signed: timestampHeader ? ['timestamp', { literal: ':' }, 'body'] : BODY_ONLY,
      };
    }
    case 'hmac':
      return {
        ...base,
        header: (sig.header as string).toLowerCase(),
        ...(sig.timestampHeader ? { timestampHeader: sig.timestampHeader.toLowerCase() } : {}),
        ...(sig.idHeader ? { idHeader: sig.idHeader.toLowerCase() } : {}),
        algorithm: sig.algorithm ?? 'sha256',
        encoding: sig.encoding ?? 'hex',
        prefix: sig.prefix ?? '',
        signed: parseSignedContent(sig.signedContent ?? '{body}'),
      };
  }
}

/** `{timestamp}.{body}` -> ['timestamp', {literal: '.'}, 'body']. */
export function parseSignedContent(template: string): SignedPart[] {
  const parts: SignedPart[] = [];
  for (const piece of template.split(/(\{(?:id|timestamp|body)\})/)) {
    if (piece === '') continue;
    const m = /^\{(id|timestamp|body)\}$/.exec(piece);
    parts.push(m ? (m[1] as 'id' | 'timestamp' | 'body') : { literal: piece });
  }
  return parts;
}

const WHSEC = 'whsec_';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The HMAC key a secret stands for: Standard Webhooks secrets are base64 after `whsec_`; the others are used as written. */
export function signingKey(scheme: SignatureScheme, value: string): Buffer {
  if (scheme !== 'standard-webhooks') return Buffer.from(value, 'utf8');
  return Buffer.from(value.startsWith(WHSEC) ? value.slice(WHSEC.length) : value, 'base64');
}

/** The longest signing secret a route carries (route.schema.json, secrets[].value). */
export const MAX_SIGNING_SECRET_CHARS = 1024;

/** Why a secret cannot be the scheme's secret, or undefined. Never quotes the secret. */
export function signingSecretProblem(scheme: SignatureScheme, value: string): string | undefined {
  if (value.length === 0) return 'is empty';
  if (value.length > MAX_SIGNING_SECRET_CHARS) return `is longer than ${MAX_SIGNING_SECRET_CHARS} characters`;
  if (scheme !== 'standard-webhooks') return undefined;
  const encoded = value.startsWith(WHSEC) ? value.slice(WHSEC.length) : value;
  if (!BASE64.test(encoded)) return 'is not a Standard Webhooks secret (whsec_ followed by base64)';
  if (Buffer.from(encoded, 'base64').length < 16) return 'is shorter than 16 bytes once base64-decoded';
  return undefined;
}

/** A new secret in the scheme's form: `whsec_` + base64 of 32 random bytes, else 256 random bits, URL-safe. */
export function generateSigningSecret(scheme: SignatureScheme): string {
  const bytes = randomBytes(32);
  return scheme === 'standard-webhooks' ? `${WHSEC}${bytes.toString('base64')}` : bytes.toString('base64url');
}

/** The values a signed request carries besides its body: the message id and the Unix time in seconds. */
export interface SignedMessage {
  id: string;
  timestamp: number;
}

/**
 * The headers a sender that follows `rule` adds to a request with this body, signed with `secret`:
 * the signature (with the scheme's prefix) and, where the scheme has them, the timestamp and the
 * message id. The sender's side of what ingester/auth/signature-check.ts verifies (its unit tests
 * check the two against each other); the console's test events are signed with it.
 */
export function signatureHeaders(
  rule: SignatureRule,
  secret: string,
  body: Buffer | string,
  message: SignedMessage,
): Record<string, string> {
  const timestamp = String(message.timestamp);
  const hmac = createHmac(rule.algorithm, signingKey(rule.scheme, secret));
  for (const part of rule.signed) {
    if (part === 'body') hmac.update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
    else if (part === 'timestamp') hmac.update(timestamp, 'latin1');
    else if (part === 'id') hmac.update(message.id, 'latin1');
    else hmac.update(part.literal, 'utf8');
  }
  const headers: Record<string, string> = { [rule.header]: `${rule.prefix}${hmac.digest(rule.encoding)}` };
  if (rule.timestampHeader) headers[rule.timestampHeader] = timestamp;
  if (rule.idHeader) headers[rule.idHeader] = message.id;
  return headers;
}

export const includesBasic = (mode: AuthenticationMode): boolean => mode !== 'signature';
export const includesSignature = (mode: AuthenticationMode): boolean => mode !== 'basic';

/** The signature settings a spec and a route share (the route adds secrets, the spec a secretRef). */
export type SignatureSettings = Omit<RouteSignature, 'secrets'> & { secrets?: RouteSignature['secrets'] };

const HMAC_ONLY = ['idHeader', 'algorithm', 'encoding', 'prefix', 'signedContent'] as const;

/**
 * What the schema cannot say about signature settings: which fields a scheme takes, and that the
 * template signs exactly the headers that are read. Each problem names its field under `at`.
 */
export function signatureProblems(sig: SignatureSettings, at: string): string[] {
  const problems: string[] = [];
  const isHmac = sig.scheme === 'hmac';
  for (const field of HMAC_ONLY)
    if (!isHmac && sig[field] !== undefined) problems.push(`${at}/${field} is only for scheme hmac`);
  if (sig.header !== undefined && !isHmac && sig.scheme !== 'grafana')
    problems.push(`${at}/header is only for schemes grafana and hmac (${sig.scheme} has its own header)`);
  if (sig.timestampHeader !== undefined && !isHmac && sig.scheme !== 'grafana')
    problems.push(`${at}/timestampHeader is only for schemes grafana and hmac (${sig.scheme} has its own)`);
  if (isHmac) problems.push(...hmacProblems(sig, at));
  for (const [i, secret] of (sig.secrets ?? []).entries()) {
    const problem = signingSecretProblem(sig.scheme, secret.value);
    if (problem) problems.push(`${at}/secrets/${i}/value ${problem}`);
  }
  return problems;
}

function hmacProblems(sig: SignatureSettings, at: string): string[] {
  const problems: string[] = [];
  if (sig.header === undefined) problems.push(`${at}/header is required with scheme hmac`);
  const template = sig.signedContent ?? '{body}';
  const count = (name: string): number => template.split(`{${name}}`).length - 1;
  if (count('body') !== 1) problems.push(`${at}/signedContent must contain {body} exactly once`);
  for (const [placeholder, field] of [
    ['timestamp', 'timestampHeader'],
    ['id', 'idHeader'],
  ] as const) {
    if (count(placeholder) > 1) problems.push(`${at}/signedContent contains {${placeholder}} more than once`);
    // A header read but not signed could be changed by anyone: protection against old requests sent again would be for show.
    if (sig[field] !== undefined && count(placeholder) === 0)
      problems.push(`${at}/signedContent must contain {${placeholder}} when ${field} is set (else it is not signed)`);
    if (sig[field] === undefined && count(placeholder) > 0)
      problems.push(`${at}/signedContent uses {${placeholder}}, which needs ${field}`);
  }
  return problems;
}

/** How the route's mode, credentials and signature fit together (validateRoute, after the schema). */
export function authenticationProblems(route: Route): string[] {
  const auth = route.authentication;
  if (route.kind !== 'WebhookIntegration')
    return auth ? ['/authentication is only for a WebhookIntegration (an ApiKey is its own credential)'] : [];
  const mode = auth?.mode ?? 'basic';
  const problems: string[] = [];
  if (includesBasic(mode) && route.credentials.length === 0)
    problems.push(`/credentials must hold at least one credential with authentication mode ${mode}`);
  if (!includesBasic(mode) && route.credentials.length > 0)
    problems.push('/credentials must be empty with authentication mode signature (no Basic credentials are checked)');
  if (includesSignature(mode) && !auth?.signature)
    problems.push(`/authentication/signature is required with authentication mode ${mode}`);
  if (!includesSignature(mode) && auth?.signature)
    problems.push('/authentication/signature is only used with mode signature or basic+signature');
  if (auth?.signature) problems.push(...signatureProblems(auth.signature, '/authentication/signature'));
  return problems;
}
