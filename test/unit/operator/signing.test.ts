/** The operator's plan for signed integrations: secrets in the scheme's form, kept, rotated with a grace, referenced. */
import type { V1Secret } from '@kubernetes/client-node';
import type { Route } from '../../../api/route.js';
import { validateRoute } from '../../../api/route.js';
import type { WebhookIntegration } from '../../../api/v1alpha1/types.js';
import { ScryptVerifiers } from '../../../operator/credentials.js';
import { planWebhook, ROTATED_FOR_ANNOTATION, type PlanContext } from '../../../operator/plan.js';

const NOW = new Date('2026-01-01T00:00:00Z');
const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (data: Record<string, string>, rotatedFor = ''): V1Secret => ({
  metadata: { annotations: { [ROTATED_FOR_ANNOTATION]: rotatedFor } },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
});
const wi = (spec: WebhookIntegration['spec'], annotations: Record<string, string> = {}): WebhookIntegration => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  metadata: { name: 'hooks', namespace: 'team-a', uid: 'u', generation: 1, annotations },
  spec,
});
const ctx = (over: Partial<PlanContext> = {}): PlanContext => ({
  publicBaseUrl: 'https://intake.example.com',
  defaultMaxSeries: 500,
  now: NOW,
  webhooks: [],
  readSecret: async () => undefined,
  scrypt: new ScryptVerifiers(4),
  destinations: [],
  ...over,
});
const signed = (scheme: 'standard-webhooks' | 'github', extra = {}): WebhookIntegration['spec'] => ({
  authentication: { mode: 'signature', signature: { scheme, ...extra } },
});

describe('planWebhook with authentication: signature', () => {
  it('generates a whsec_ secret for Standard Webhooks, publishes it, and no password', async () => {
    const plan = await planWebhook(wi(signed('standard-webhooks')), ctx());
    const value = plan.credentials?.data.signingSecret as string;
    expect(value).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Object.keys(plan.credentials?.data ?? {}).sort()).toEqual(['signingSecret', 'url']);
    expect(plan.route?.credentials).toEqual([]);
    expect(plan.route?.authentication).toEqual({
      mode: 'signature',
      signature: { scheme: 'standard-webhooks', secrets: [{ value }] },
    });
    expect(() => validateRoute(plan.route)).not.toThrow();
    expect(plan.ready).toMatchObject({ status: 'True', reason: 'Published' });
  });

  it('keeps the secret; on rotation keeps the previous one for the grace period', async () => {
    const spec = signed('github', { rotationGracePeriod: '10m' });
    const existing = secret({ signingSecret: 'old-secret' });
    const published = { scheme: 'github', secrets: [{ value: 'old-secret' }] } as const;
    const existingRoute = { authentication: { mode: 'signature', signature: published } } as unknown as Route;
    const kept = await planWebhook(wi(spec), ctx({ existingCredentials: existing, existingRoute }));
    expect(kept.route?.authentication?.signature?.secrets).toEqual([{ value: 'old-secret' }]);
    const rotated = await planWebhook(
      wi(spec, { 'intake.dev/rotate': '1' }),
      ctx({ existingCredentials: existing, existingRoute }),
    );
    const fresh = rotated.credentials?.data.signingSecret as string;
    expect(fresh).not.toBe('old-secret');
    expect(rotated.route?.authentication?.signature?.secrets).toEqual([
      { value: fresh },
      { value: 'old-secret', notAfter: '2026-01-01T00:10:00.000Z' },
    ]);
    expect(rotated.requeueAfterMs).toBe(10 * 60_000 + 1000);
    expect(rotated.notices.map((n) => n.reason)).toContain('Rotated');
  });

  it('with basic+signature publishes both, in one credentials Secret', async () => {
    const plan = await planWebhook(
      wi({ authentication: { mode: 'basic+signature', signature: { scheme: 'github' } } }),
      ctx(),
    );
    expect(Object.keys(plan.credentials?.data ?? {}).sort()).toEqual([
      'authorization',
      'password',
      'signingSecret',
      'url',
      'username',
    ]);
    expect(plan.route?.credentials).toHaveLength(1);
    expect(plan.route?.authentication?.mode).toBe('basic+signature');
  });

  it('uses a referenced Secret, and keeps its previous value for the grace period when it changes', async () => {
    const spec = signed('github', { secretRef: { name: 'gh', key: 'token' }, rotationGracePeriod: '1h' });
    const readSecret = async (ns: string, name: string) =>
      ns === 'team-a' && name === 'gh' ? secret({ token: 'second' }) : undefined;
    const existingRoute = {
      authentication: { mode: 'signature', signature: { scheme: 'github', secrets: [{ value: 'first' }] } },
    } as unknown as Route;
    const plan = await planWebhook(wi(spec), ctx({ readSecret, existingRoute }));
    expect(plan.credentials).toBeUndefined();
    expect(plan.status.credentialsSecret).toBe('gh');
    expect(plan.route?.authentication?.signature?.secrets).toEqual([
      { value: 'second' },
      { value: 'first', notAfter: '2026-01-01T01:00:00.000Z' },
    ]);
  });

  it('is not Ready when the referenced Secret is missing, or its value is not the scheme form', async () => {
    const missing = await planWebhook(wi(signed('github', { secretRef: { name: 'nope' } })), ctx());
    expect(missing.ready).toMatchObject({ status: 'False', reason: 'SecretNotFound' });
    expect(missing.route).toBeUndefined();
    const bad = await planWebhook(
      wi(signed('standard-webhooks', { secretRef: { name: 's' } })),
      ctx({ readSecret: async () => secret({ signingSecret: 'not base64!' }) }),
    );
    expect(bad.ready).toMatchObject({ status: 'False', reason: 'SecretInvalid' });
    expect(bad.ready.message).not.toContain('not base64!');
  });

  it('generates a new secret in the new form when the scheme changes, without carrying the old one', async () => {
    const existingRoute = {
      authentication: { mode: 'signature', signature: { scheme: 'github', secrets: [{ value: 'gh-secret' }] } },
    } as unknown as Route;
    const plan = await planWebhook(
      wi(signed('standard-webhooks', { rotationGracePeriod: '1h' })),
      ctx({ existingCredentials: secret({ signingSecret: 'gh-secret' }), existingRoute }),
    );
    const secrets = plan.route?.authentication?.signature?.secrets ?? [];
    expect(secrets).toHaveLength(1);
    expect(secrets[0]?.value).toMatch(/^whsec_/);
  });

  it('reports InvalidSpec naming the field for settings that cannot work', async () => {
    const plan = await planWebhook(
      wi({
        authentication: {
          mode: 'signature',
          signature: { scheme: 'hmac', header: 'X-Sig', signedContent: '{id}.{body}' },
        },
      }),
      ctx(),
    );
    expect(plan.ready).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(plan.ready.message).toBe('spec.authentication.signature.signedContent uses {id}, which needs idHeader');
  });

  it('gives InvalidSpec, publishing nothing, for a setting the CRD let through but the route contract refuses', async () => {
    // Stored before the CRD gave prefix its pattern: a space cannot be part of a header's signature.
    const plan = await planWebhook(
      wi({ authentication: { mode: 'signature', signature: { scheme: 'hmac', header: 'X-Sig', prefix: 'sha256 =' } } }),
      ctx(),
    );
    expect(plan.ready).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(plan.ready.message).toBe(
      'cannot be published: spec.authentication.signature.prefix must match pattern "^[\\x21-\\x7e]*$"',
    );
    expect(plan.route).toBeUndefined();
    expect(plan.credentials).toBeUndefined();
    expect(plan.status).toEqual({ integrationName: 'hooks', url: 'https://intake.example.com/events/webhook_hooks' });
  });

  it('gives SecretInvalid for a referenced signing secret longer than a route carries, never quoting it', async () => {
    const long = 'k'.repeat(1025);
    const plan = await planWebhook(
      wi(signed('github', { secretRef: { name: 's' } })),
      ctx({ readSecret: async () => secret({ signingSecret: long }) }),
    );
    expect(plan.ready).toMatchObject({ status: 'False', reason: 'SecretInvalid' });
    expect(plan.ready.message).toBe('the signingSecret in Secret team-a/s is longer than 1024 characters');
    expect(plan.route).toBeUndefined();
  });
});
