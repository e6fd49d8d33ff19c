import type { V1Secret } from '@kubernetes/client-node';
import type { Destination, WebhookIntegration } from '../../../api/v1alpha1/types.js';
import { planDestination, type DestinationPlanContext } from '../../../operator/destination-plan.js';
import { planWebhook, type PlanContext } from '../../../operator/plan.js';
import { ScryptVerifiers } from '../../../operator/credentials.js';

const destination = (spec: Destination['spec'], name = 'tickets', namespace = 'team-a'): Destination => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'Destination',
  metadata: { name, namespace, generation: 1 },
  spec,
});
const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (data: Record<string, string>): V1Secret => ({
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
});

/** Secrets by namespace/name; every read is recorded, to show which namespace was read. */
function secrets(all: Record<string, V1Secret>): DestinationPlanContext & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    platformDestinations: ['alertmanager', 'tickets'],
    readSecret: async (ns, name) => {
      reads.push(`${ns}/${name}`);
      return all[`${ns}/${name}`];
    },
  };
}

describe('planDestination', () => {
  it('publishes an HTTP destination with its Basic password and TLS material read from Secrets of its own namespace', async () => {
    const ctx = secrets({
      'team-a/receiver': secret({ password: 's3cret', username: 'intake' }),
      'team-a/receiver-tls': secret({ 'ca.crt': 'CA PEM' }),
      'team-b/receiver': secret({ password: 'not theirs' }),
    });
    const plan = await planDestination(
      destination({
        http: {
          url: 'https://hooks.team-a.example/intake',
          timeout: '3s',
          batchSize: 10,
          headers: { 'x-team': 'a' },
          basicAuth: { secretRef: { name: 'receiver' } },
          tls: { secretRef: { name: 'receiver-tls' } },
        },
        delivery: { maxAttempts: 3 },
        rateLimit: { eventsPerSecond: 50 },
      }),
      ctx,
    );
    expect(ctx.reads).toEqual(['team-a/receiver', 'team-a/receiver-tls']);
    expect(plan.ready).toMatchObject({ status: 'True', reason: 'Published' });
    expect(plan.ready.message).toContain("not the platform's of the same name");
    expect(plan.destinationName).toBe('team-a/tickets');
    expect(plan.paused).toMatchObject({ status: 'False' });
    expect(plan.circuitOpen).toMatchObject({ status: 'Unknown', reason: 'NotReported' });
    expect(plan.document).toEqual({
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'Destination',
      name: 'tickets',
      namespace: 'team-a',
      http: {
        url: 'https://hooks.team-a.example/intake',
        timeout: '3s',
        batchSize: 10,
        headers: { 'x-team': 'a' },
        basicAuth: { username: 'intake', password: 's3cret' },
        tls: { ca: 'CA PEM' },
      },
      delivery: { maxAttempts: 3 },
      rateLimit: { eventsPerSecond: 50 },
    });
  });

  it('publishes an Alertmanager destination with a bearer token under the key named', async () => {
    const ctx = secrets({ 'team-a/am': secret({ apiToken: 'tok' }) });
    const plan = await planDestination(
      destination(
        {
          suspend: true,
          alertmanager: {
            urls: ['http://am-0.team-a:9093', 'http://am-1.team-a:9093'],
            resendInterval: '30s',
            maxAlerts: 100,
            maxAlertsPerNamespace: 100,
            bearerToken: { secretRef: { name: 'am', key: 'apiToken' } },
          },
        },
        'pager',
      ),
      ctx,
    );
    expect(plan.ready.status).toBe('True');
    expect(plan.paused).toMatchObject({ status: 'True', reason: 'Suspended' });
    expect(plan.document).toMatchObject({
      suspend: true,
      alertmanager: { urls: ['http://am-0.team-a:9093', 'http://am-1.team-a:9093'], bearerToken: 'tok' },
    });
  });

  it('publishes autoPause as the spec gives it (absent: the defaults, 24h, apply in the ingester)', async () => {
    const plan = await planDestination(
      destination({ http: { url: 'http://r' }, autoPause: { after: '1h30m' } }),
      secrets({}),
    );
    expect(plan.ready.status).toBe('True');
    expect(plan.document?.autoPause).toEqual({ after: '1h30m' });
    const off = await planDestination(
      destination({ http: { url: 'http://r' }, autoPause: { enabled: false } }),
      secrets({}),
    );
    expect(off.document?.autoPause).toEqual({ enabled: false });
    const absent = await planDestination(destination({ http: { url: 'http://r' } }), secrets({}));
    expect(absent.document).not.toHaveProperty('autoPause');
  });

  it('is Ready=False SecretNotFound or SecretInvalid, publishing nothing, when a Secret or its key is missing', async () => {
    const missing = await planDestination(
      destination({ http: { url: 'http://r', basicAuth: { username: 'u', secretRef: { name: 'nope' } } } }),
      secrets({}),
    );
    expect(missing.ready).toEqual({
      status: 'False',
      reason: 'SecretNotFound',
      message: 'Secret team-a/nope named in spec.http.basicAuth.secretRef does not exist',
    });
    expect(missing.document).toBeUndefined();
    const noKey = await planDestination(
      destination({ http: { url: 'http://r', bearerToken: { secretRef: { name: 'tok' } } } }),
      secrets({ 'team-a/tok': secret({ other: 'x' }) }),
    );
    expect(noKey.ready).toMatchObject({
      status: 'False',
      reason: 'SecretInvalid',
      message: 'Secret team-a/tok has no token key',
    });
    const noUser = await planDestination(
      destination({ http: { url: 'http://r', basicAuth: { secretRef: { name: 'p' } } } }),
      secrets({ 'team-a/p': secret({ password: 'x' }) }),
    );
    expect(noUser.ready.reason).toBe('SecretInvalid');
  });

  it('is Ready=False InvalidSpec naming the field for what the ingesters would refuse', async () => {
    const cases: Array<[Destination['spec'], string]> = [
      [{}, 'give exactly one of spec.alertmanager or spec.http'],
      [
        { http: { url: 'http://a' }, alertmanager: { urls: ['http://b'] } },
        'give exactly one of spec.alertmanager or spec.http',
      ],
      [{ http: { url: 'http://r', timeout: 'soon' } }, 'spec.http.timeout must match pattern'],
      [
        { http: { url: 'http://r', headers: { Authorization: 'x' } } },
        'spec.http.headers: Authorization is set by intake',
      ],
      [{ http: { url: 'http://user:pw@r' } }, 'spec.http: put credentials in basicAuth or bearerToken, not in the URL'],
      [
        { http: { url: 'http://r' }, delivery: { backoffMin: '10s', backoffMax: '1s' } },
        'spec.delivery.backoffMax: must be at least',
      ],
      [
        { alertmanager: { urls: ['http://r'], maxAlerts: 5, maxAlertsPerNamespace: 6 } },
        'maxAlertsPerNamespace: must not exceed',
      ],
      [{ http: { url: 'http://r' }, autoPause: { after: '0s' } }, 'spec.autoPause.after: must be longer than 0'],
      [{ http: { url: 'http://r' }, autoPause: { after: '1 day' } }, 'spec.autoPause.after must match pattern'],
      [
        { http: { url: 'http://r' }, autoPause: { after: '2s', forever: true } as never },
        'spec.autoPause must NOT have additional properties',
      ],
    ];
    for (const [spec, message] of cases) {
      const plan = await planDestination(destination(spec), secrets({}));
      expect(plan.ready).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
      expect(plan.ready.message).toContain(message);
      expect(plan.document).toBeUndefined();
    }
  });
});

describe('planDestination with many in the namespace', () => {
  it('publishes the oldest up to the most a namespace may have, and says why not for the rest', async () => {
    const spec = { http: { url: 'http://r' } };
    const within = await planDestination(destination(spec), {
      ...secrets({}),
      olderInNamespace: 15,
      maxPerNamespace: 16,
    });
    expect(within.ready.status).toBe('True');
    const beyond = await planDestination(destination(spec), {
      ...secrets({}),
      olderInNamespace: 16,
      maxPerNamespace: 16,
    });
    expect(beyond.ready).toMatchObject({ status: 'False', reason: 'TooManyDestinations' });
    expect(beyond.ready.message).toContain('--max-destinations-per-namespace');
    expect(beyond.document).toBeUndefined();
  });
});

describe("planWebhook with the namespace's own destinations", () => {
  const wi = (spec: WebhookIntegration['spec'], ns = 'team-a'): WebhookIntegration => ({
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'WebhookIntegration',
    metadata: { name: 'alerts', namespace: ns, uid: 'u', creationTimestamp: new Date('2026-01-01'), generation: 1 },
    spec,
  });
  const ctx = (team: string[]): PlanContext => ({
    publicBaseUrl: 'https://intake.example.com',
    defaultMaxSeries: 500,
    now: new Date('2026-01-01T00:00:00Z'),
    webhooks: [],
    readSecret: async () => undefined,
    scrypt: new ScryptVerifiers(4),
    destinations: ['alertmanager', 'tickets'],
    teamDestinations: team,
  });

  it("names a team destination <namespace>/<name> in the route, and the namespace's own wins over the platform's of the same name", async () => {
    const plan = await planWebhook(
      wi({
        destinations: ['alertmanager', 'tickets', 'chat'],
        rules: [{ match: { severity: { min: 'critical' } }, destinations: ['chat', 'alertmanager'] }, { drop: true }],
      }),
      ctx(['tickets', 'chat']),
    );
    expect(plan.ready.status).toBe('True');
    expect(plan.route?.destinations).toEqual(['alertmanager', 'team-a/tickets', 'team-a/chat']);
    expect(plan.route?.rules).toEqual([
      { match: { severity: { min: 'critical' } }, destinations: ['team-a/chat', 'alertmanager'] },
      { drop: true },
    ]);
  });

  it("is Ready=False DestinationNotReady naming the namespace's Destination that is not published, keeping what was", async () => {
    const plan = await planWebhook(wi({ destinations: ['alertmanager', 'chat'] }), {
      ...ctx(['chat']),
      publishedTeamDestinations: [],
    });
    expect(plan.ready).toMatchObject({ status: 'False', reason: 'DestinationNotReady' });
    expect(plan.ready.message).toContain('Destination chat is not published');
    expect(plan.route).toBeUndefined();
  });

  it("is Ready=False UnknownDestination naming a name that is neither the platform's nor the namespace's", async () => {
    const plan = await planWebhook(wi({ destinations: ['chat', 'pager'] }), ctx(['chat']));
    expect(plan.ready).toEqual({
      status: 'False',
      reason: 'UnknownDestination',
      message:
        "spec.destinations: unknown destination pager (configured: alertmanager, tickets; the namespace's: chat)",
    });
    expect(plan.route).toBeUndefined();
  });
});
