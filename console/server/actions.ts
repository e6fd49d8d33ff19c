/**
 * What the detail page does beyond reading and writing the resource: reveal the credentials (only
 * when the user's own token may get the Secret), send a test event or a dry run to the
 * integration's URL as its sender would (Basic credentials, a signature made with its current
 * signing secret, or both: spec.authentication, docs/signatures.md), give the same request as a
 * curl command, and run the integration's spec.mapping.tests.
 */
import { randomUUID } from 'node:crypto';
import type { AuthenticationMode } from '../../api/route.js';
import {
  includesBasic,
  includesSignature,
  ruleOf,
  signatureHeaders,
  type SignatureRule,
} from '../../api/signatures.js';
import type { SignatureSpec } from '../../api/v1alpha1/types.js';
import {
  compileMapping,
  DEFAULT_MAPPING_LIMITS,
  firstDifference,
  MappingBusy,
  MappingError,
  type ExpressionRunner,
  type MappingLimits,
  type MappingSpec,
} from '../../api/mapping/engine.js';
import type { Credentials, CurlResult, MappingTestResult, SendResult } from '../shared/console-api.js';
import { curlCommand } from './curl.js';
import { KubeError, type Plural, type UserClient } from './kube.js';

/** The Secret key of a generated signing secret, and of a referenced one unless secretRef.key says (operator/signing.ts). */
const SIGNING_SECRET_KEY = 'signingSecret';

const decode = (data: Record<string, string> | undefined, key: string): string =>
  data?.[key] ? Buffer.from(data[key], 'base64').toString('utf8') : '';

interface IntegrationSpec {
  credentials?: { username?: string; secretRef?: { name?: string } };
  authentication?: { mode?: AuthenticationMode; signature?: SignatureSpec };
}

export const modeOf = (obj: Record<string, unknown>): AuthenticationMode =>
  (obj.spec as IntegrationSpec | undefined)?.authentication?.mode ?? 'basic';

/** The scheme's rule from spec.authentication.signature (api/signatures.ts; the secrets play no part). */
export function signatureRuleOf(obj: Record<string, unknown>): SignatureRule {
  const spec = (obj.spec as IntegrationSpec | undefined)?.authentication?.signature;
  if (!spec) throw new KubeError(409, `spec.authentication.signature is required with mode ${modeOf(obj)}`);
  const { secretRef: _ref, tolerance: _tolerance, rotationGracePeriod: _grace, ...settings } = spec;
  return ruleOf(settings);
}

/** Reads a Secret as the user; a refusal says which Secret and why the console needs it. */
async function readSecret(user: UserClient, namespace: string, name: string) {
  try {
    return await user.secret(namespace, name);
  } catch (err) {
    const e = KubeError.from(err);
    if (e.status === 403)
      throw new KubeError(
        403,
        `your Kubernetes identity may not get the Secret ${namespace}/${name}, so the console cannot show or use the credentials (the API server said: ${e.message})`,
        'Forbidden',
      );
    throw e;
  }
}

/**
 * The credentials a sender uses, read with the user's identity: the password from
 * spec.credentials.secretRef or the credentials Secret (status.credentialsSecret), the signing
 * secret from spec.authentication.signature.secretRef or the credentials Secret (key signingSecret).
 */
export async function readCredentials(
  user: UserClient,
  namespace: string,
  plural: Plural,
  name: string,
): Promise<Credentials> {
  const obj = await user.get(namespace, plural, name);
  const spec = obj.spec as IntegrationSpec | undefined;
  const status = obj.status as { credentialsSecret?: string; integrationName?: string; username?: string } | undefined;
  const mode = plural === 'apikeys' ? 'basic' : modeOf(obj);
  const generated = status?.credentialsSecret;
  const notYet = () => new KubeError(409, 'the operator has not written the credentials Secret yet');
  const read = new Map<string, Awaited<ReturnType<typeof readSecret>>>();
  const secretNamed = async (secretName: string) => {
    if (!read.has(secretName)) read.set(secretName, await readSecret(user, namespace, secretName));
    return read.get(secretName) as Awaited<ReturnType<typeof readSecret>>;
  };

  let signature: Credentials['signature'];
  if (includesSignature(mode)) {
    const sig = spec?.authentication?.signature;
    if (!sig) throw new KubeError(409, `spec.authentication.signature is required with mode ${mode}`);
    const secretName = sig.secretRef?.name ?? generated;
    if (!secretName) throw notYet();
    const key = sig.secretRef?.key ?? SIGNING_SECRET_KEY;
    const signingSecret = decode((await secretNamed(secretName)).data, key);
    if (!signingSecret)
      throw new KubeError(
        409,
        `the Secret ${namespace}/${secretName} has no ${key} (yet): no signing secret to sign with`,
      );
    signature = { scheme: sig.scheme, signingSecret, secretName, key };
  }
  if (!includesBasic(mode)) {
    const username = status?.integrationName ?? name;
    return { mode, username, secret: '', authorization: '', secretName: signature?.secretName ?? '', signature };
  }
  const secretName = (plural === 'webhookintegrations' ? spec?.credentials?.secretRef?.name : undefined) ?? generated;
  if (!secretName) throw notYet();
  const secret = await secretNamed(secretName);
  const username =
    decode(secret.data, 'username') ||
    spec?.credentials?.username ||
    status?.username ||
    status?.integrationName ||
    name;
  const value = plural === 'apikeys' ? decode(secret.data, 'apiKey') : decode(secret.data, 'password');
  const authorization =
    decode(secret.data, 'authorization') || `Basic ${Buffer.from(`${username}:${value}`).toString('base64')}`;
  return { mode, username, secret: value, authorization, secretName, ...(signature ? { signature } : {}) };
}

const MAX_ANSWER_CHARS = 64 * 1024;

/** The integration's URL, with the scheme and host of `ingestUrl` when the console reaches the ingesters another way. */
function targetOf(obj: Record<string, unknown>, ingestUrl?: string): URL {
  const statusUrl = (obj.status as { url?: string } | undefined)?.url;
  if (!statusUrl)
    throw new KubeError(409, 'the integration has no URL yet (status.url): the operator has not published it');
  const target = new URL(statusUrl);
  if (ingestUrl) {
    const base = new URL(ingestUrl);
    target.protocol = base.protocol;
    target.host = base.host;
  }
  return target;
}

/**
 * POSTs `payload` to the integration's URL as the sender would: with its Basic credentials, signed
 * with its current signing secret per its scheme (a fresh message id and the time now), or both, as
 * spec.authentication says. `ingestUrl` replaces the scheme and host of status.url when the console
 * reaches the ingesters by another address than senders do (in the cluster: the ingester Service).
 */
export async function sendTestEvent(
  user: UserClient,
  namespace: string,
  name: string,
  payload: string,
  dryRun: boolean,
  ingestUrl?: string,
): Promise<SendResult> {
  const obj = await user.get(namespace, 'webhookintegrations', name);
  const target = targetOf(obj, ingestUrl);
  const credentials = await readCredentials(user, namespace, 'webhookintegrations', name);
  if (dryRun) target.searchParams.set('dryRun', 'true');
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'intake-console' };
  if (includesBasic(credentials.mode)) headers.authorization = credentials.authorization;
  if (credentials.signature)
    Object.assign(
      headers,
      signatureHeaders(signatureRuleOf(obj), credentials.signature.signingSecret, payload, {
        id: `console_${randomUUID()}`,
        timestamp: Math.floor(Date.now() / 1000),
      }),
    );
  const started = performance.now();
  let res: Response;
  try {
    res = await fetch(target, {
      method: 'POST',
      headers,
      body: payload,
      signal: AbortSignal.timeout(15_000),
      redirect: 'manual',
    });
  } catch (err) {
    throw new KubeError(502, `could not reach ${target.origin}: ${(err as Error).cause ?? (err as Error).message}`);
  }
  const body = (await res.text()).slice(0, MAX_ANSWER_CHARS);
  return {
    url: target.toString(),
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    body,
    durationMs: Math.round(performance.now() - started),
  };
}

/**
 * The test event as a curl command that works: with the Basic credentials, and for a signed
 * integration the signature computed by openssl at run time (as docs/signatures.md's examples do).
 * A secret the user may not read is left to the shell: $PASSWORD, $SIGNING_SECRET.
 */
export async function testEventCurl(
  user: UserClient,
  namespace: string,
  name: string,
  payload: string,
): Promise<CurlResult> {
  const obj = await user.get(namespace, 'webhookintegrations', name);
  const url = (obj.status as { url?: string } | undefined)?.url ?? '';
  const mode = modeOf(obj);
  let credentials: Credentials | undefined;
  let refused: string | undefined;
  try {
    credentials = await readCredentials(user, namespace, 'webhookintegrations', name);
  } catch (err) {
    const e = KubeError.from(err);
    if (e.status !== 403) throw e;
    refused = e.message;
  }
  const status = obj.status as { integrationName?: string } | undefined;
  const needs: string[] = [];
  if (!credentials && includesBasic(mode)) needs.push('PASSWORD');
  if (!credentials && includesSignature(mode)) needs.push('SIGNING_SECRET');
  const command = curlCommand({
    url,
    payload,
    ...(includesBasic(mode)
      ? {
          basic: {
            username: credentials?.username ?? status?.integrationName ?? name,
            ...(credentials ? { password: credentials.secret } : {}),
          },
        }
      : {}),
    ...(includesSignature(mode)
      ? {
          signature: {
            rule: signatureRuleOf(obj),
            ...(credentials?.signature ? { secret: credentials.signature.signingSecret } : {}),
          },
        }
      : {}),
  });
  return {
    command,
    ...(refused ? { note: `Set ${needs.map((n) => `$${n}`).join(' and ')} before running it: ${refused}.` } : {}),
  };
}

/**
 * Runs each of spec.mapping.tests (the check the operator makes before publishing), reporting every
 * one. A tenant's expression runs in `runner` (the mapping worker processes, killed at the CPU
 * limit: a runaway built-in call or regular expression included), never in the console's own
 * thread; presets, which are ours, run here. After a test runs out of time the rest are not run:
 * one run costs at most one time limit of a worker, whatever the integration holds.
 * Rejects with MappingBusy when the workers can take nothing more.
 */
export async function runTests(
  mapping: MappingSpec,
  runner: ExpressionRunner,
  limits: MappingLimits = DEFAULT_MAPPING_LIMITS,
): Promise<MappingTestResult[]> {
  let compiled;
  try {
    compiled = compileMapping(mapping, limits, runner);
  } catch (err) {
    return [{ index: -1, outcome: 'failed', passed: false, message: MappingError.from(err).describe() }];
  }
  const results: MappingTestResult[] = [];
  let timedOut = false;
  for (const [index, test] of (mapping.tests ?? []).entries()) {
    if (timedOut) {
      results.push({ index, outcome: 'not run', passed: false, message: 'not run: an earlier test timed out' });
      continue;
    }
    let events: unknown[];
    try {
      events = (await compiled.evaluate(test.input)).items;
    } catch (err) {
      if (err instanceof MappingBusy) throw err;
      const e = MappingError.from(err);
      timedOut = e.code === 'D1012';
      results.push({ index, outcome: timedOut ? 'timed out' : 'failed', passed: false, message: e.describe() });
      continue;
    }
    const expected = Array.isArray(test.expect) ? test.expect : [test.expect];
    let message = '';
    if (events.length !== expected.length)
      message = `expected ${expected.length} event(s), the mapping produced ${events.length}`;
    for (let j = 0; !message && j < expected.length; j++) {
      const difference = firstDifference(expected[j], events[j], '');
      if (difference) message = `event ${j}: ${difference}`;
    }
    results.push({
      index,
      outcome: message ? 'failed' : 'passed',
      passed: !message,
      message: message || 'passed',
      events,
    });
  }
  return results;
}
