/**
 * What every request to the admin listener shows before a route sees it. The admin port holds
 * every tenant's series and dead letters and can replay them, so two browser attacks are closed
 * here, whatever the network in front of it allows:
 *
 * - **DNS rebinding.** A page on attacker.example whose name the attacker re-points at 127.0.0.1
 *   (a developer's local ingester) or at a pod address is same-origin with its own name, so the
 *   browser lets it read the answers; but it sends `Host: attacker.example`. Only an IP literal,
 *   localhost or a configured name (the admin Service's DNS names) is answered; anything else gets
 *   421. An IP literal is safe: a page at http://10.1.2.3 is already that origin, no name to rebind.
 * - **Cross-site writes.** A form or a no-cors fetch from any page can POST with no body or a
 *   text/plain one, but cannot add a custom header or send application/json without a CORS
 *   preflight, and this listener never answers one with Access-Control-Allow-*. So every method but
 *   GET and HEAD needs `X-Intake-Admin: true` (403 without it) and a JSON object body sent as
 *   `Content-Type: application/json` (415 for another type, 400 for no body or not an object).
 */
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  ADMIN_WRITE_HEADER,
  adminHeaderRequired,
  adminJsonRequired,
  hostNotAllowed,
  invalidJson,
} from '../core/errors.js';
import { sendError } from './send-error.js';

const SAFE_METHODS = new Set(['GET', 'HEAD']);
const HEADER = ADMIN_WRITE_HEADER.toLowerCase();

/** A configured name as it is compared: lower case, no trailing dot. */
export const normalHostName = (name: string): string => name.toLowerCase().replace(/\.$/, '');

/** A DNS name (letters, digits, hyphens, dots), as adminAllowedHosts accepts it. */
export const isHostName = (name: string): boolean =>
  name.length <= 253 &&
  /^(?=.*[a-z])[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i.test(name);

/**
 * The host part of a Host header (`name`, `name:port`, `1.2.3.4:port`, `[::1]:port`), or
 * undefined when the header is not of that form (a bare IPv6 address, a stray colon, a bad port).
 */
export function hostOf(header: string): string | undefined {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(header);
  if (bracketed) return isIP(bracketed[1] as string) === 6 ? (bracketed[1] as string) : undefined;
  const plain = /^([^:[\]]+)(?::(\d{1,5}))?$/.exec(header);
  return plain?.[1];
}

/** Whether the admin listener answers a request carrying this Host header. */
export function hostAllowed(header: string | undefined, names: ReadonlySet<string>): boolean {
  if (!header) return false;
  const host = hostOf(header);
  if (host === undefined) return false;
  if (isIP(host) !== 0) return true;
  const name = normalHostName(host);
  return name === 'localhost' || names.has(name);
}

/** Media type of a Content-Type header, parameters dropped. */
const mediaType = (value: string | undefined): string | undefined =>
  value?.split(';')[0]?.trim().toLowerCase() || undefined;

/** Whether a request may change state: the custom header (one value, `true`) and a JSON content type. */
function writeRefusal(req: FastifyRequest): ReturnType<typeof adminHeaderRequired> | undefined {
  const marker = req.headers[HEADER];
  if (typeof marker !== 'string' || marker.trim().toLowerCase() !== 'true') return adminHeaderRequired();
  const contentType = req.headers['content-type'];
  if (mediaType(contentType) !== 'application/json') return adminJsonRequired(contentType);
  return undefined;
}

export function registerAdminGuard(app: FastifyInstance, allowedHosts: readonly string[]): void {
  const names = new Set(allowedHosts.map(normalHostName));
  app.addHook('onRequest', async (req, reply) => {
    if (!hostAllowed(req.headers.host, names)) return sendError(reply, hostNotAllowed(req.headers.host));
    if (SAFE_METHODS.has(req.method)) return;
    const refusal = writeRefusal(req);
    if (refusal) return sendError(reply, refusal);
  });
  // After the JSON parser: an absent body already failed there (400); `[]`, `null` or `"x"` fail here.
  app.addHook('preValidation', async (req, reply) => {
    if (SAFE_METHODS.has(req.method)) return;
    const body = req.body;
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      return sendError(reply, invalidJson('the body must be a JSON object, e.g. {}'));
  });
}
