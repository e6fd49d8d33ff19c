import type { V1Secret } from '@kubernetes/client-node';
import type { ApiKey, WebhookIntegration } from '../../../api/v1alpha1/types.js';
import { sha256Hex } from '../../../api/verifiers.js';
import { ScryptVerifiers } from '../../../operator/credentials.js';
import { parseDuration } from '../../../common/duration.js';
import {
  nameHolder,
  planApiKey,
  planWebhook,
  ROTATED_FOR_ANNOTATION,
  type PlanContext,
} from '../../../operator/plan.js';

const wi = (
  name: string,
  ns: string,
  created: string,
  spec: WebhookIntegration['spec'] = {},
  annotations: Record<string, string> = {},
): WebhookIntegration => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  metadata: {
    name,
    namespace: ns,
    uid: `${ns}-${name}`,
    creationTimestamp: created as unknown as Date,
    generation: 1,
    annotations,
  },
  spec,
});

const b64 = (s: string) => Buffer.from(s).toString('base64');
const credSecret = (data: Record<string, string>, rotatedFor = ''): V1Secret => ({
  metadata: { annotations: { [ROTATED_FOR_ANNOTATION]: rotatedFor } },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
});

const ctx = (over: Partial<PlanContext> = {}): PlanContext => ({
  publicBaseUrl: 'https://intake.example.com',
  defaultMaxSeries: 500,
  now: new Date('2026-01-01T00:00:00Z'),
  webhooks: [],
  readSecret: async () => undefined,
  scrypt: new ScryptVerifiers(4),
  destinations: [],
  ...over,
});

describe('planWebhook', () => {
  it('generates a 256-bit password and publishes its sha256 only', async () => {
    const plan = await planWebhook(wi('alerts', 'team-a', '2026-01-01T00:00:00Z'), ctx());
    const password = plan.credentials?.data.password as string;
    expect(Buffer.from(password, 'base64url')).toHaveLength(32);
    expect(plan.route?.credentials).toEqual([{ username: 'alerts', secret: { sha256: sha256Hex(password) } }]);
    expect(JSON.stringify(plan.route)).not.toContain(password);
    expect(plan.credentials?.data.authorization).toBe(`Basic ${b64(`alerts:${password}`)}`);
    expect(plan.status).toMatchObject({
      integrationName: 'alerts',
      url: 'https://intake.example.com/events/webhook_alerts',
      credentialsSecret: 'intake-webhook-alerts',
    });
    expect(plan.ready).toMatchObject({ status: 'True', reason: 'Published' });
  });

  it('keeps an existing password', async () => {
    const plan = await planWebhook(
      wi('alerts', 'a', '2026-01-01T00:00:00Z'),
      ctx({ existingCredentials: credSecret({ password: 'kept' }) }),
    );
    expect(plan.credentials?.data.password).toBe('kept');
  });

  it('rotates when the annotation changes, keeping the old password for the grace period', async () => {
    const obj = wi(
      'alerts',
      'a',
      '2026-01-01T00:00:00Z',
      { credentials: { rotationGracePeriod: '10m' } },
      { 'intake.dev/rotate': '2' },
    );
    const plan = await planWebhook(obj, ctx({ existingCredentials: credSecret({ password: 'old' }, '1') }));
    expect(plan.credentials?.data.password).not.toBe('old');
    expect(plan.route?.credentials[1]).toEqual({
      username: 'alerts',
      secret: { sha256: sha256Hex('old') },
      notAfter: '2026-01-01T00:10:00.000Z',
    });
    expect(plan.requeueAfterMs).toBe(601_000);
    expect(plan.notices[0]?.reason).toBe('Rotated');
  });

  it('lets the oldest integration keep a contested name', async () => {
    const older = wi('shared', 'a', '2026-01-01T00:00:00Z');
    const newer = wi('shared', 'b', '2026-01-02T00:00:00Z');
    const plan = await planWebhook(newer, ctx({ webhooks: [newer, older] }));
    expect(plan.ready).toMatchObject({ status: 'False', reason: 'NameConflict' });
    expect(plan.route).toBeUndefined();
    expect(nameHolder('shared', [newer, older])).toBe(older);
  });

  it('uses a referenced Secret with a scrypt verifier, or reports it missing', async () => {
    const obj = wi('ref', 'a', '2026-01-01T00:00:00Z', { credentials: { secretRef: { name: 'mine' } } });
    const missing = await planWebhook(obj, ctx());
    expect(missing.ready.reason).toBe('SecretNotFound');
    const found = await planWebhook(
      obj,
      ctx({ readSecret: async () => credSecret({ username: 'bob', password: 'pw' }) }),
    );
    expect(found.route?.credentials[0]?.username).toBe('bob');
    expect(found.route?.credentials[0]?.secret).toHaveProperty('scrypt');
    expect(found.credentials).toBeUndefined();
  });

  it('gives SecretInvalid for a username in the referenced Secret longer than a route carries', async () => {
    const obj = wi('ref', 'a', '2026-01-01T00:00:00Z', { credentials: { secretRef: { name: 'mine' } } });
    const plan = await planWebhook(
      obj,
      ctx({ readSecret: async () => credSecret({ username: 'u'.repeat(254), password: 'pw' }) }),
    );
    expect(plan.ready).toMatchObject({
      status: 'False',
      reason: 'SecretInvalid',
      message: 'the username in Secret a/mine is longer than 253 characters',
    });
    expect(plan.route).toBeUndefined();
  });

  it('publishes a suspended route and says so', async () => {
    const plan = await planWebhook(wi('s', 'a', '2026-01-01T00:00:00Z', { suspend: true }), ctx());
    expect(plan.route?.suspended).toBe(true);
    expect(plan.ready).toMatchObject({ status: 'False', reason: 'Suspended' });
  });

  it('derives a valid name from metadata.name', async () => {
    const plan = await planWebhook(wi('My.App', 'a', '2026-01-01T00:00:00Z'), ctx());
    expect(plan.status.integrationName).toBe('my-app');
  });
});

describe('planApiKey', () => {
  it('generates <namespace>_<160 bits> and carries the series cap', async () => {
    const key: ApiKey = {
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'ApiKey',
      metadata: { name: 'k', namespace: 'team-a', uid: 'u' },
      spec: {},
    };
    const plan = await planApiKey(key, ctx());
    expect(plan.credentials?.data.apiKey).toMatch(/^team-a_[0-9a-f]{40}$/);
    expect(plan.credentials?.data.username).toBe('team-a');
    expect(plan.route?.limits).toMatchObject({ maxSeries: 500, overLimitStatus: 429 });
    expect(plan.effectiveLimits).toEqual(plan.route?.limits);
  });

  it('gives InvalidSpec for a rotation grace period no date can hold', async () => {
    const plan = await planWebhook(
      wi('w', 'team-a', '2026-01-01T00:00:00Z', { credentials: { rotationGracePeriod: '3000000000h' } }),
      ctx(),
    );
    expect(plan.ready).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(plan.ready?.message).toMatch(/maximum/);
    expect(plan.route).toBeUndefined();
  });

  it('gives InvalidSpec, publishing nothing, for a spec its route contract refuses', async () => {
    const key: ApiKey = {
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'ApiKey',
      metadata: { name: 'k', namespace: 'team-a', uid: 'u' },
      spec: { username: 'u'.repeat(300) },
    };
    const plan = await planApiKey(key, ctx());
    expect(plan.ready).toEqual({
      status: 'False',
      reason: 'InvalidSpec',
      message: 'cannot be published: /credentials/0/username must NOT have more than 253 characters',
    });
    expect(plan.route).toBeUndefined();
    expect(plan.credentials).toBeUndefined();
  });
});

describe('parseDuration', () => {
  it.each([
    ['0s', 0],
    ['90s', 90_000],
    ['1h30m', 5_400_000],
    ['250ms', 250],
    [undefined, 0],
  ])('%p is %i ms', (v, ms) => {
    expect(parseDuration(v)).toBe(ms);
  });
  it('refuses what Go refuses as too long, instead of a date a reconcile cannot compute', () => {
    expect(parseDuration('2562047h')).toBe(2_562_047 * 3_600_000);
    expect(() => parseDuration('3000000000h')).toThrow(/maximum/);
  });
  it('refuses garbage', () => {
    expect(() => parseDuration('5 minutes')).toThrow(/duration/);
  });
});

describe('planWebhook with spec.mapping', () => {
  const existingRoute = {
    apiVersion: 'intake.dev/v1alpha1' as const,
    kind: 'WebhookIntegration' as const,
    name: 'am',
    namespace: 'a',
    credentials: [{ username: 'am', secret: { sha256: sha256Hex('pw') } }],
    mapping: { preset: 'alertmanager' },
  };

  it('publishes the mapping without its tests', async () => {
    const plan = await planWebhook(
      wi('am', 'a', '2026-01-01T00:00:00Z', {
        mapping: {
          expression: '{"source": h, "severity": 1}',
          tests: [{ input: { h: 'x' }, expect: { source: 'x' } }],
        },
      }),
      ctx(),
    );
    expect(plan.ready.reason).toBe('Published');
    expect(plan.route?.mapping).toEqual({ expression: '{"source": h, "severity": 1}' });
  });

  it('gives InvalidMapping with the JSONata code and position, keeping the published route', async () => {
    const plan = await planWebhook(
      wi('am', 'a', '2026-01-01T00:00:00Z', { mapping: { expression: '{"x": foo' } }),
      ctx({ existingRoute }),
    );
    expect(plan.ready).toEqual({
      status: 'False',
      reason: 'InvalidMapping',
      message: 'spec.mapping: S0203 at 9: Expected "}" before end of expression',
    });
    expect(plan.route).toBe(existingRoute);
  });

  it('gives InvalidMapping with the first difference when a test fails, publishing nothing new', async () => {
    const plan = await planWebhook(
      wi('am', 'a', '2026-01-01T00:00:00Z', {
        mapping: { preset: 'nagios', tests: [{ input: { host: 'h', state: 'OK' }, expect: { severity: 5 } }] },
      }),
      ctx(),
    );
    expect(plan.ready.reason).toBe('InvalidMapping');
    expect(plan.ready.message).toBe('spec.mapping: tests[0]: event 0: severity: expected 5, got 0');
    expect(plan.route).toBeUndefined();
  });
});

describe('planWebhook with spec.destinations', () => {
  const configured = { destinations: ['alertmanager', 'tickets'] };
  const existingRoute = {
    apiVersion: 'intake.dev/v1alpha1' as const,
    kind: 'WebhookIntegration' as const,
    name: 'am',
    namespace: 'a',
    credentials: [{ username: 'am', secret: { sha256: sha256Hex('pw') } }],
  };

  it('publishes the named destinations in the route', async () => {
    const plan = await planWebhook(
      wi('am', 'a', '2026-01-01T00:00:00Z', { destinations: ['tickets'] }),
      ctx(configured),
    );
    expect(plan.ready.reason).toBe('Published');
    expect(plan.route?.destinations).toEqual(['tickets']);
  });

  it('leaves destinations out of the route when the spec names none (the ingesters use their defaults)', async () => {
    for (const spec of [{}, { destinations: [] }]) {
      const plan = await planWebhook(wi('am', 'a', '2026-01-01T00:00:00Z', spec), ctx(configured));
      expect(plan.ready.reason).toBe('Published');
      expect(plan.route).not.toHaveProperty('destinations');
    }
  });

  it('gives UnknownDestination naming the unknown and the configured names, publishing nothing new', async () => {
    const plan = await planWebhook(
      wi('am', 'a', '2026-01-01T00:00:00Z', { destinations: ['alertmanager', 'pager', 'chat'] }),
      ctx(configured),
    );
    expect(plan.ready).toEqual({
      status: 'False',
      reason: 'UnknownDestination',
      message: 'spec.destinations: unknown destinations pager, chat (configured: alertmanager, tickets)',
    });
    expect(plan.route).toBeUndefined();
    expect(plan.credentials).toBeUndefined();
  });

  it('keeps the route already published when a destination becomes unknown', async () => {
    const plan = await planWebhook(
      wi('am', 'a', '2026-01-01T00:00:00Z', { destinations: ['tickets'] }),
      ctx({ destinations: ['alertmanager'], existingRoute }),
    );
    expect(plan.ready).toMatchObject({
      status: 'False',
      reason: 'UnknownDestination',
      message: 'spec.destinations: unknown destination tickets (configured: alertmanager)',
    });
    expect(plan.route).toBe(existingRoute);
  });

  it('says none are configured when the operator has no --destinations', async () => {
    const plan = await planWebhook(wi('am', 'a', '2026-01-01T00:00:00Z', { destinations: ['alertmanager'] }), ctx());
    expect(plan.ready.message).toBe('spec.destinations: unknown destination alertmanager (configured: none)');
  });
});

describe('planWebhook with spec.rules', () => {
  const configured = { destinations: ['alertmanager', 'tickets'] };

  it('publishes the rules in the route', async () => {
    const rules = [
      { name: 'pages', match: { severity: { min: 'critical' as const } }, destinations: ['alertmanager'] },
      { match: { source: { regex: 'test-.*' } }, drop: true },
    ];
    const plan = await planWebhook(wi('am', 'a', '2026-01-01T00:00:00Z', { rules }), ctx(configured));
    expect(plan.ready.reason).toBe('Published');
    expect(plan.route?.rules).toEqual(rules);
  });

  it('a rule naming an unknown destination: UnknownDestination naming the rule', async () => {
    const plan = await planWebhook(
      wi('am', 'a', '2026-01-01T00:00:00Z', { rules: [{ name: 'pages', destinations: ['pager'] }] }),
      ctx(configured),
    );
    expect(plan.ready).toEqual({
      status: 'False',
      reason: 'UnknownDestination',
      message: 'spec.rules[0] (rule pages).destinations: unknown destination pager (configured: alertmanager, tickets)',
    });
  });

  it('a regular expression that does not compile: InvalidSpec naming the rule and the field', async () => {
    const plan = await planWebhook(
      wi('am', 'a', '2026-01-01T00:00:00Z', {
        rules: [
          { destinations: ['tickets'] },
          { name: 'db', match: { customInfo: { team: { regex: '(pay' } } }, destinations: ['tickets'] },
        ],
      }),
      ctx(configured),
    );
    expect(plan.ready.status).toBe('False');
    expect(plan.ready.reason).toBe('InvalidSpec');
    expect(plan.ready.message).toMatch(
      /^cannot be published: spec\.rules\.1\.match\.customInfo\.team\.regex \(rule db\) is not a valid regular expression/,
    );
    expect(plan.route).toBeUndefined();
  });
});
