/**
 * The event inspector in the console (docs/inspector.md): an integration's captured requests, read
 * from the ingesters' admin listener (`--ingester-admin-url`) for a user the API server lets
 * `inspect` the integration. Captured bodies may hold the sending tool's own secrets, so `get`
 * (view) is not enough: the verb `inspect` on webhookintegrations is asked for with a
 * SelfSubjectAccessReview made as the user, before anything is read.
 */
import type { FastifyRequest } from 'fastify';
import type { ConsoleEndpoints } from '../context.js';
import { HttpError } from '../http-error.js';

export const INSPECT_VERB = 'inspect';

type Params = { ns: string; name: string; id?: string };

export const inspectorEndpoints: ConsoleEndpoints = (app, { options, auth }) => {
  // The ingesters' admin listener (with the bus, any replica answers for all). Absent: not offered.
  const { ingesterAdminUrl } = options;
  const base = '/api/namespaces/:ns/webhookintegrations/:name/inspector';
  app.get<{ Params: Params }>(base, async (req) => fromIngesters(req, ''));
  app.get<{ Params: Params }>(`${base}/:id`, async (req) =>
    fromIngesters(req, `/${encodeURIComponent(req.params.id ?? '')}`),
  );
  app.post<{ Params: Params; Body: { event?: unknown } }>(`${base}/:id/replay`, async (req) =>
    fromIngesters(req, `/${encodeURIComponent(req.params.id ?? '')}/replay`, { event: req.body?.event ?? 0 }),
  );

  /** The user may inspect this integration (else 403), then the ingesters' answer as it is. */
  async function fromIngesters(req: FastifyRequest<{ Params: Params }>, rest: string, body?: unknown) {
    if (!ingesterAdminUrl)
      throw new HttpError(
        404,
        'inspector_not_configured',
        'this console was started without --ingester-admin-url: it cannot read captured requests',
      );
    const { ns, name } = req.params;
    const user = auth.userOf(req);
    if (!(await user.can(ns, INSPECT_VERB, 'webhookintegrations', name)))
      throw new HttpError(
        403,
        'forbidden',
        `reading captured requests needs the verb "${INSPECT_VERB}" on webhookintegrations/${name} in ${ns} (more than view: bodies may hold the tool's own secrets)`,
      );
    // The route is published under the integration name, which spec.name may set apart from metadata.name.
    const resource = (await user.get(ns, 'webhookintegrations', name)) as {
      spec?: { name?: string };
      status?: { integrationName?: string };
    };
    const integration = resource.status?.integrationName ?? resource.spec?.name ?? name;
    const url = `${ingesterAdminUrl}/inspector/${encodeURIComponent(ns)}/${encodeURIComponent(integration)}${rest}`;
    let res: Response;
    try {
      res = await fetch(
        url,
        body === undefined
          ? {}
          : {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-intake-admin': 'true' },
              body: JSON.stringify(body),
            },
      );
    } catch (err) {
      throw new HttpError(
        502,
        'ingesters_unreachable',
        `the ingesters' admin listener could not be reached: ${(err as Error).message}`,
      );
    }
    const answer = (await res.json().catch(() => ({}))) as { error?: string; message?: string };
    if (!res.ok) throw new HttpError(res.status, answer.error ?? 'ingester', answer.message ?? `HTTP ${res.status}`);
    return answer;
  }
};
