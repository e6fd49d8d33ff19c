/**
 * Signed senders with the operator and the ingester on a real kube-apiserver: a WebhookIntegration
 * with `authentication: signature` gets a generated signing secret in the scheme's form and becomes
 * Ready; requests signed with it by the Standard Webhooks reference library are accepted; rotation
 * keeps both secrets valid for the grace period; the API server refuses bad combinations, naming the field.
 */
import { jest } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import {
  apply,
  kubectl,
  type Proc,
  readSecret as readSecretIn,
  secretValue as decode,
  webhookReady,
} from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(120_000);

const suite = operatorSuite('team-sig');
const [team] = suite.tenants;
let ingester: Proc;

const readSecret = (name: string) => readSecretIn(team, name);
const readyOf = (name: string) => webhookReady(team, name);

const webhook = (name: string, spec: string) => `apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: ${name}, namespace: ${team}}
spec: ${spec}
`;

/** POSTs an event signed by the Standard Webhooks reference library with `secret`. */
async function postSigned(name: string, secret: string, id: string): Promise<number> {
  const body = JSON.stringify({ source: 'signed-host', severity: 'critical' });
  const now = new Date();
  const res = await fetch(`${ingester.url}/events/webhook_${name}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(id, now, body),
    },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

const signingSecretOf = async (name: string): Promise<string> =>
  decode(
    await waitFor(`credentials Secret of ${name}`, () => readSecret(`intake-webhook-${name}`), 5000),
    'signingSecret',
  );

beforeAll(async () => {
  await suite.startOperator();
  ingester = await suite.startIngester();
});

it('generates a whsec_ secret, becomes Ready, and accepts what the reference library signs with it', async () => {
  await apply(webhook('sw', '{authentication: {mode: signature, signature: {scheme: standard-webhooks}}}'));
  await waitFor('Ready', async () => (await readyOf('sw'))?.status === 'True', 5000);
  const secret = await signingSecretOf('sw');
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  const data = (await readSecret('intake-webhook-sw'))?.data ?? {};
  // Signature only: no password is generated or accepted.
  expect(Object.keys(data).sort()).toEqual(['signingSecret', 'url']);
  await waitFor('signed event accepted', async () => (await postSigned('sw', secret, 'msg_1')) === 200, 5000);
  const other = 'whsec_' + Buffer.alloc(32, 3).toString('base64');
  expect(await postSigned('sw', other, 'msg_2')).toBe(401);
});

it('rotation keeps the old and the new secret valid for the grace period, then only the new', async () => {
  await apply(
    webhook(
      'rotating-sig',
      '{authentication: {mode: signature, signature: {scheme: standard-webhooks, rotationGracePeriod: 5s}}}',
    ),
  );
  const old = await signingSecretOf('rotating-sig');
  await waitFor('old accepted', async () => (await postSigned('rotating-sig', old, 'r-1')) === 200, 5000);
  await kubectl(['annotate', 'webhookintegration', 'rotating-sig', '-n', team, 'intake.dev/rotate=1', '--overwrite']);
  const fresh = await waitFor(
    'new signing secret',
    async () => {
      const s = await signingSecretOf('rotating-sig');
      return s !== old ? s : undefined;
    },
    5000,
  );
  expect(fresh).toMatch(/^whsec_/);
  await waitFor('new accepted', async () => (await postSigned('rotating-sig', fresh, 'r-2')) === 200, 3000);
  expect(await postSigned('rotating-sig', old, 'r-3')).toBe(200);
  await waitFor(
    'old refused after the grace period',
    async () => (await postSigned('rotating-sig', old, `r-old-${Date.now()}`)) === 401,
    15_000,
    200,
  );
  expect(await postSigned('rotating-sig', fresh, 'r-4')).toBe(200);
});

it('uses a referenced Secret for a GitHub signature', async () => {
  await apply(`apiVersion: v1
kind: Secret
metadata: {name: gh-hook, namespace: ${team}}
stringData: {token: chosen-in-github}
`);
  await apply(
    webhook(
      'gh',
      '{authentication: {mode: signature, signature: {scheme: github, secretRef: {name: gh-hook, key: token}}}}',
    ),
  );
  const body = JSON.stringify({ source: 'gh', severity: 2 });
  const post = async (secret: string) => {
    const res = await fetch(`${ingester.url}/events/webhook_gh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': await octokitSign(secret, body) },
      body,
    });
    await res.arrayBuffer();
    return res.status;
  };
  await waitFor('accepted with the referenced secret', async () => (await post('chosen-in-github')) === 200, 5000);
  expect(await post('something-else')).toBe(401);
});

it('is refused by the API server when the mode and the signature do not fit, naming the field', async () => {
  const missing = await kubectl(['apply', '-f', '-'], webhook('bad-1', '{authentication: {mode: signature}}'));
  expect(missing.code).not.toBe(0);
  expect(missing.stderr).toContain('spec.authentication.signature is required when mode is signature');
  const slack = await kubectl(
    ['apply', '-f', '-'],
    webhook('bad-2', '{authentication: {mode: signature, signature: {scheme: slack}}}'),
  );
  expect(slack.code).not.toBe(0);
  expect(slack.stderr).toContain('spec.authentication.signature.secretRef is required with scheme slack');
  const hmacOnly = await kubectl(
    ['apply', '-f', '-'],
    webhook('bad-3', '{authentication: {mode: signature, signature: {scheme: github, algorithm: sha512}}}'),
  );
  expect(hmacOnly.code).not.toBe(0);
  expect(hmacOnly.stderr).toContain('are only for scheme hmac');
  // The route schema's pattern: the ingesters could never publish a prefix with a space.
  const prefix = await kubectl(
    ['apply', '-f', '-'],
    webhook(
      'bad-4',
      "{authentication: {mode: signature, signature: {scheme: hmac, header: X-Sig, prefix: 'sha256 ='}}}",
    ),
  );
  expect(prefix.code).not.toBe(0);
  expect(prefix.stderr).toContain('spec.authentication.signature.prefix');
});

it('reports InvalidSpec for an hmac template that does not sign the timestamp header it reads', async () => {
  await apply(
    webhook(
      'bad-template',
      '{authentication: {mode: signature, signature: {scheme: hmac, header: X-Sig, timestampHeader: X-Ts}}}',
    ),
  );
  await waitFor('InvalidSpec', async () => (await readyOf('bad-template'))?.reason === 'InvalidSpec', 5000);
  expect((await readyOf('bad-template'))?.message).toContain(
    'spec.authentication.signature.signedContent must contain {timestamp} when timestampHeader is set',
  );
});
