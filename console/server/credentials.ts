/**
 * An integration's or API key's credentials as the console reveals them: read from their Secrets
 * as the user (so only when the user's own token may get them), with the signing secret of a
 * signed integration (spec.authentication, docs/signatures.md).
 */
import type { AuthenticationMode } from '../../api/route.js';
import { includesBasic, includesSignature, ruleOf, type SignatureRule } from '../../api/signatures.js';
import type { SignatureSpec } from '../../api/v1alpha1/types.js';
import type { Credentials } from '../shared/console-api.js';
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
