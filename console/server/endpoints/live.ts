/** The list page's live feed: one Server-Sent Events stream per open page (watch-stream.ts), bounded per user and in all. */
import type { ConsoleEndpoints } from '../context.js';
import { isRefusal } from '../bounds.js';
import { HttpError } from '../http-error.js';
import { streamNamespace } from '../watch-stream.js';

export const liveEndpoints: ConsoleEndpoints = (app, { auth, streams }) => {
  app.get<{ Params: { ns: string } }>('/api/namespaces/:ns/live', async (req, reply) => {
    const user = auth.userOf(req);
    const place = streams.acquire(await auth.userNameOf(req, user));
    if (isRefusal(place)) throw HttpError.of(place);
    reply.hijack();
    // The page may have gone while its user's name was asked: nothing to follow then.
    if (req.raw.socket.destroyed) return place.release();
    reply.raw.once('close', place.release);
    streamNamespace(user, req.params.ns, reply.raw);
  });
};
