/**
 * What every request must carry before any route sees it: a Host the console answers for (DNS
 * rebinding), writes from the console's own page (same origin, JSON), and a session, except for
 * the app's files and the sign-in. Also the security headers of every answer.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ConsoleAuth } from './auth.js';
import type { ConsoleOptions } from './options.js';
import { APP_FILES } from './endpoints/app-files.js';
import { CONTENT_SECURITY_POLICY, isSameOriginWrite } from './security.js';

export interface GuardOptions {
  mode: ConsoleOptions['mode'];
  auth: ConsoleAuth;
  /** Host header values answered (lower case); undefined: any. Known once the console listens. */
  allowedHosts: () => Set<string> | undefined;
}

const plainText = (reply: FastifyReply, status: number, text: string) =>
  reply.code(status).type('text/plain; charset=utf-8').send(text);

export function guard({ mode, auth, allowedHosts }: GuardOptions) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
    reply.header('cache-control', 'no-store');
    const host = String(req.headers.host ?? '');
    // DNS rebinding: a page at evil.example resolved to 127.0.0.1 sends Host: evil.example.
    const hosts = allowedHosts();
    if (hosts && !hosts.has(host.toLowerCase()))
      return reply
        .code(403)
        .send({ error: 'host_not_allowed', message: `the console does not answer for Host ${JSON.stringify(host)}` });
    if (req.method !== 'GET' && req.method !== 'HEAD' && !isSameOriginWrite(req.headers, host))
      return reply.code(403).send({
        error: 'cross_site_request',
        message: 'writes must come from the console page itself (JSON body, same origin)',
      });
    const path = req.url.split('?')[0] ?? '/';
    // The app's code is no secret; the sign-in (one-time token or Kubernetes token) checks itself.
    if (APP_FILES[path] !== undefined || path === '/api/login') return;
    if (mode === 'kubeconfig') {
      if (path === '/') {
        // The page with the printed URL's token (the page spends it by POST /api/login), or for a
        // browser that has a session cookie (a reload): it is only the app, which asks for the rest.
        const token = (req.query as { token?: string }).token;
        if (token !== undefined && !auth.oneTime.isFresh(token))
          return plainText(
            reply,
            401,
            'This console link was already used or is wrong. Run `intake console` again for a new one.\n',
          );
        if (token === undefined && !auth.sessions.has(auth.cookieOf(req)))
          return plainText(reply, 401, 'Open the URL `intake console` printed (it carries a one-time token).\n');
        return;
      }
      if (!auth.sessionOf(req))
        return reply.code(401).send({
          error: 'no_token',
          message:
            'this tab has no console session: open the URL `intake console` printed (it works once; run it again for a new one)',
        });
      return;
    }
    const bearer = auth.bearerOf(req);
    if (bearer) {
      const refused = await auth.checkBearer(req, bearer);
      if (refused) {
        if (refused.retryAfterSeconds !== undefined) reply.header('retry-after', String(refused.retryAfterSeconds));
        return reply.code(refused.status).send({ error: refused.code, message: refused.message });
      }
    }
    // Token mode: the page and the session check are open; everything else needs a signed-in user.
    const open = path === '/' || path === '/api/session';
    if (!open && !auth.sessionOf(req))
      return reply.code(401).send({ error: 'not_signed_in', message: 'sign in first' });
  };
}
