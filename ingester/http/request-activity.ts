/**
 * Activity (activity/recorder.ts) of an answered ingest request, in this one place for every
 * answer whichever way the request was served (fastify or the direct events route): a request the
 * endpoint accepted, or any refusal, whichever step refused it (so a new kind of refusal is
 * recorded without a change here). A refusal before authentication is the named integration's
 * when it is published, else the endpoint's unattributed bucket; it is kept apart from the
 * refusals of authenticated requests and without the User-Agent (anyone can send one).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ActivityEndpoint, ActivityRecorder } from '../activity/recorder.js';
import type { IntakeError } from '../core/errors.js';
import type { RouteEntry, RouteTable } from '../routing/route-table.js';

/** What an answered request noted along the way. */
export interface AnsweredRequest {
  refusal: IntakeError | null;
  authenticated: boolean;
  routeEntry: RouteEntry | null;
  accepted: number;
  droppedByRule: number;
  ip: string;
  headers: IncomingHttpHeaders;
}

export function recordActivity(
  activity: ActivityRecorder,
  routes: () => RouteTable,
  req: AnsweredRequest,
  endpoint: ActivityEndpoint,
  /** The integration named in the URL (events only). */
  webhookName: string | undefined,
): void {
  if (req.refusal) {
    const entry = req.routeEntry ?? (endpoint === 'events' ? routes().webhook(webhookName ?? '') : undefined);
    if (req.authenticated) activity.refused(entry, endpoint, req.refusal, req.ip, req.headers['user-agent']);
    else activity.refusedUnauthenticated(entry, endpoint, req.refusal, req.ip);
  } else if (req.accepted > 0 && req.routeEntry) {
    activity.accepted(req.routeEntry, req.accepted);
    if (req.droppedByRule > 0) activity.droppedByRule(req.routeEntry, req.droppedByRule);
  }
}
