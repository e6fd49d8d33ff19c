/** Parses an `Authorization: Basic <base64(user:password)>` header (RFC 7617). */

export interface BasicCredentials {
  username: string;
  password: string;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const MAX_HEADER_VALUE = 4096;

/** Returns undefined for a missing or malformed header: the caller answers 401 either way. */
export function parseBasicAuth(header: string | string[] | undefined): BasicCredentials | undefined {
  if (typeof header !== 'string' || header.length > MAX_HEADER_VALUE) return undefined;
  const space = header.indexOf(' ');
  if (space < 0 || header.slice(0, space).toLowerCase() !== 'basic') return undefined;
  const encoded = header.slice(space + 1).trim();
  if (!BASE64.test(encoded)) return undefined;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * The value of a header that must appear once. Node keeps only the first of repeated
 * Authorization headers; a proxy may keep the last, so two of them are refused, not guessed at.
 */
export function soleHeader(rawHeaders: readonly string[], lowerName: string): string | undefined {
  let found: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as string).length !== lowerName.length || (rawHeaders[i] as string).toLowerCase() !== lowerName)
      continue;
    if (found !== undefined) return undefined;
    found = rawHeaders[i + 1];
  }
  return found;
}
