/**
 * `intake console`: the web console's server. It serves the single-page app (dist/console/web)
 * and a small JSON API over the user's own Kubernetes identity (kube.ts). Two modes:
 * - kubeconfig (`intake console` on a laptop): the caller's kubeconfig, loopback only, a one-time
 *   token in the printed URL exchanged for a session (a cookie and a secret the page sends in a
 *   header, security.ts), the Host header checked;
 * - token (`--auth token`, the chart's in-cluster Deployment): each user signs in with a
 *   Kubernetes bearer token (pasted, or `Authorization: Bearer` from an authenticating proxy).
 *
 * Where things are: who is asking, auth.ts; what every request must carry, guard.ts; the endpoints,
 * one module per area in endpoints/ (listed in endpoints/index.ts); what they share, context.ts.
 */
import Fastify from 'fastify';
import { createContext } from './context.js';
import { guard } from './guard.js';
import { errorHandler } from './http-error.js';
import type { ConsoleOptions, RunningConsole } from './options.js';
import { CONSOLE_ENDPOINTS } from './endpoints/index.js';
import { allowedLocalHosts } from './security.js';

export { CONSOLE_DEFAULTS, type ConsoleOptions, type RunningConsole } from './options.js';

export async function startConsole(options: ConsoleOptions): Promise<RunningConsole> {
  const ctx = createContext(options);
  // forceCloseConnections: the live streams (SSE) would otherwise hold close() open.
  const app = Fastify({ logger: false, bodyLimit: 2 * 1024 * 1024, forceCloseConnections: true });
  let allowedHosts: Set<string> | undefined;
  app.addHook('onRequest', guard({ mode: options.mode, auth: ctx.auth, allowedHosts: () => allowedHosts }));
  app.setErrorHandler(errorHandler(options.logger));
  for (const endpoints of CONSOLE_ENDPOINTS) endpoints(app, ctx);

  const address = await app.listen({ host: options.host, port: options.port });
  const port = (app.server.address() as { port: number }).port;
  if (options.allowedHosts) allowedHosts = new Set(options.allowedHosts.map((h) => h.toLowerCase()));
  else if (options.mode === 'kubeconfig') allowedHosts = allowedLocalHosts(port);
  const base = options.mode === 'kubeconfig' ? `http://127.0.0.1:${port}` : address;
  return {
    url: options.mode === 'kubeconfig' ? `${base}/?token=${ctx.auth.oneTime.value}` : base,
    port,
    close: async () => {
      await app.close();
      await ctx.mappingWorkers.close();
    },
  };
}
