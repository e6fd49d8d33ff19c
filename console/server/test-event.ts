/**
 * A test event or a dry run sent to the integration's URL as its sender would (Basic credentials,
 * a signature made with its current signing secret, or both: spec.authentication,
 * docs/signatures.md), and the same request as a curl command.
 */
import { randomUUID } from 'node:crypto';
import { includesBasic, includesSignature, signatureHeaders } from '../../api/signatures.js';
import type { Credentials, CurlResult, SendResult } from '../shared/console-api.js';
import { modeOf, readCredentials, signatureRuleOf } from './credentials.js';
import { curlCommand } from './curl.js';
import { KubeError, type UserClient } from './kube.js';

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
