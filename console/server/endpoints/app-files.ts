/** The single-page app itself (dist/console/web, built by `npm run build:console`): read once at start. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ConsoleEndpoints } from '../context.js';

/** The app's code and style by path: no secret, served without a session (guard.ts). */
export const APP_FILES: Readonly<Record<string, string>> = {
  '/app.js': 'text/javascript; charset=utf-8',
  '/style.css': 'text/css; charset=utf-8',
};

export const appFileEndpoints: ConsoleEndpoints = (app, { options }) => {
  // dist/console/server/endpoints/ -> dist/console/web/
  const webDir = options.webDir ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
  const route = (path: string, name: string, type: string) => {
    const content = readFileSync(join(webDir, name));
    app.get(path, (_req, reply) => reply.type(type).send(content));
  };
  // The page: who may have it (a fresh one-time token, a session) is the guard's to say.
  route('/', 'index.html', 'text/html; charset=utf-8');
  for (const [path, type] of Object.entries(APP_FILES)) route(path, path.slice(1), type);
};
