/**
 * What the detail page does beyond reading and writing the resource: reveal the credentials (only
 * when the user's own token may get the Secret), send a test event or a dry run to the
 * integration's URL with those credentials, and run the integration's spec.mapping.tests.
 */
import { compileMapping, firstDifference, MappingError, type MappingSpec } from '../../api/mapping/engine.js';
import { KubeError, type Plural, type UserClient } from './kube.js';

export interface Credentials {
  username: string;
  /** The password (integrations) or the key (API keys). */
  secret: string;
  authorization: string;
  secretName: string;
}

const decode = (data: Record<string, string> | undefined, key: string): string =>
  data?.[key] ? Buffer.from(data[key], 'base64').toString('utf8') : '';

/** The credentials Secret's name: status.credentialsSecret, or the user's own spec.credentials.secretRef. */
function secretNameOf(obj: Record<string, unknown>): string | undefined {
  const status = obj.status as { credentialsSecret?: string } | undefined;
  const spec = obj.spec as { credentials?: { secretRef?: { name?: string } } } | undefined;
  return status?.credentialsSecret ?? spec?.credentials?.secretRef?.name;
}

export async function readCredentials(
  user: UserClient,
  namespace: string,
  plural: Plural,
  name: string,
): Promise<Credentials> {
  const obj = await user.get(namespace, plural, name);
  const secretName = secretNameOf(obj);
  if (!secretName) throw new KubeError(409, 'the operator has not written the credentials Secret yet');
  let secret;
  try {
    secret = await user.secret(namespace, secretName);
  } catch (err) {
    const e = KubeError.from(err);
    if (e.status === 403)
      throw new KubeError(
        403,
        `your Kubernetes identity may not get the Secret ${namespace}/${secretName}, so the console cannot show or use the credentials (the API server said: ${e.message})`,
        'Forbidden',
      );
    throw e;
  }
  const spec = obj.spec as { credentials?: { username?: string } } | undefined;
  const status = obj.status as { integrationName?: string; username?: string } | undefined;
  const username =
    decode(secret.data, 'username') ||
    spec?.credentials?.username ||
    status?.username ||
    status?.integrationName ||
    name;
  const value = plural === 'apikeys' ? decode(secret.data, 'apiKey') : decode(secret.data, 'password');
  const authorization =
    decode(secret.data, 'authorization') || `Basic ${Buffer.from(`${username}:${value}`).toString('base64')}`;
  return { username, secret: value, authorization, secretName };
}

export interface SendResult {
  url: string;
  status: number;
  contentType: string;
  body: string;
  durationMs: number;
}

const MAX_ANSWER_CHARS = 64 * 1024;

/**
 * POSTs `payload` to the integration's URL as the sender would, with its credentials. `ingestUrl`
 * replaces the scheme and host of status.url when the console reaches the ingesters by another
 * address than senders do (in the cluster: the ingester Service).
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
  const statusUrl = (obj.status as { url?: string } | undefined)?.url;
  if (!statusUrl)
    throw new KubeError(409, 'the integration has no URL yet (status.url): the operator has not published it');
  const credentials = await readCredentials(user, namespace, 'webhookintegrations', name);
  const target = new URL(statusUrl);
  if (ingestUrl) {
    const base = new URL(ingestUrl);
    target.protocol = base.protocol;
    target.host = base.host;
  }
  if (dryRun) target.searchParams.set('dryRun', 'true');
  const started = performance.now();
  let res: Response;
  try {
    res = await fetch(target, {
      method: 'POST',
      headers: {
        authorization: credentials.authorization,
        'content-type': 'application/json',
        'user-agent': 'intake-console',
      },
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

export interface MappingTestResult {
  index: number;
  passed: boolean;
  message: string;
  events?: unknown[];
}

/** Runs each of spec.mapping.tests (the check the operator makes before publishing), reporting every one. */
export async function runTests(mapping: MappingSpec): Promise<MappingTestResult[]> {
  let compiled;
  try {
    compiled = compileMapping(mapping);
  } catch (err) {
    return [{ index: -1, passed: false, message: MappingError.from(err).describe() }];
  }
  const results: MappingTestResult[] = [];
  for (const [index, test] of (mapping.tests ?? []).entries()) {
    let events: unknown[];
    try {
      events = (await compiled.evaluate(test.input)).items;
    } catch (err) {
      results.push({ index, passed: false, message: MappingError.from(err).describe() });
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
    results.push({ index, passed: !message, message: message || 'passed', events });
  }
  return results;
}
