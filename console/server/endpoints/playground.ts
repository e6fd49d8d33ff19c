/**
 * Trying an integration: a test event sent to its URL as the sender would (or a dry run: what it
 * maps to and where it would go), the same request as a curl command, and a run of
 * spec.mapping.tests in the console's mapping workers, one run per user at a time.
 */
import type { MappingSpec } from '../../../api/mapping/engine.js';
import type { ConsoleEndpoints } from '../context.js';
import { runTests } from '../mapping-tests.js';
import { sendTestEvent, testEventCurl } from '../test-event.js';
import { isRefusal } from '../bounds.js';
import { HttpError } from '../http-error.js';
import { objectBody, type ObjectParams } from '../request.js';

export const playgroundEndpoints: ConsoleEndpoints = (app, { options, auth, mappingRuns, mappingWorkers }) => {
  const integration = '/api/namespaces/:ns/webhookintegrations/:name';
  /** The payload a test event sends: the JSON text as the user wrote it. */
  const payloadOf = (body: Record<string, unknown>): string => {
    if (typeof body.payload !== 'string')
      throw new HttpError(400, 'invalid_body', 'payload: a string (the JSON to send)');
    return body.payload;
  };

  app.post<{ Params: ObjectParams }>(`${integration}/send`, async (req) => {
    const { ns, name } = req.params;
    const body = objectBody(req);
    return sendTestEvent(auth.userOf(req), ns, name, payloadOf(body), body.dryRun === true, options.ingestUrl);
  });
  app.post<{ Params: ObjectParams }>(`${integration}/curl`, async (req) => {
    const { ns, name } = req.params;
    return testEventCurl(auth.userOf(req), ns, name, payloadOf(objectBody(req)));
  });
  app.post<{ Params: ObjectParams }>(`${integration}/mapping-tests`, async (req) => {
    const { ns, name } = req.params;
    const user = auth.userOf(req);
    const run = mappingRuns.acquire(await auth.userNameOf(req, user));
    if (isRefusal(run)) throw HttpError.of(run);
    try {
      const obj = await user.get(ns, 'webhookintegrations', name);
      const mapping = (obj.spec as { mapping?: MappingSpec } | undefined)?.mapping;
      if (!mapping) throw new HttpError(409, 'no_mapping', 'the integration has no spec.mapping');
      return { results: await runTests(mapping, mappingWorkers) };
    } finally {
      run.release();
    }
  });
};
