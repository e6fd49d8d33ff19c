/**
 * The signature part of a WebhookIntegration's route (docs/signatures.md): the scheme's settings
 * from spec.authentication.signature, and the signing secrets: generated in the scheme's form
 * into the credentials Secret (key signingSecret), or read from the Secret the user names. After a
 * rotation (annotation intake.dev/rotate) or a change of the referenced Secret, the previous secret
 * stays in the route until the grace period ends, as a password does.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { RouteSignature, SigningSecret } from '../api/route.js';
import { generateSigningSecret, signatureProblems, signingSecretProblem } from '../api/signatures.js';
import { ROTATE_ANNOTATION, type SignatureSpec, type WebhookIntegration } from '../api/v1alpha1/types.js';
import { parseDuration } from '../common/duration.js';
import type { ReadyState } from './conditions.js';
import { credentialsSecretName, ROTATED_FOR_ANNOTATION } from './naming.js';

/** The credentials Secret's key for the signing secret, and a referenced Secret's key unless secretRef.key says. */
export const SIGNING_SECRET_KEY = 'signingSecret';
const SPEC = 'spec.authentication.signature';

export interface SigningPlan {
  ok: true;
  signature: RouteSignature;
  /** The generated secret for the credentials Secret; absent with secretRef. */
  generated?: string;
  notices: Array<{ type: 'Normal' | 'Warning'; reason: string; message: string }>;
}

export interface SigningRefusal {
  ok: false;
  reason: ReadyState['reason'];
  message: string;
}

export interface SigningContext {
  now: Date;
  existingCredentials?: V1Secret;
  /** The signature the integration's route carries now, if any. */
  published?: RouteSignature;
  readSecret: (namespace: string, name: string) => Promise<V1Secret | undefined>;
}

const decode = (secret: V1Secret | undefined, key: string): string | undefined => {
  const v = secret?.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
};

const refuse = (reason: ReadyState['reason'], message: string): SigningRefusal => ({ ok: false, reason, message });

export async function planSigning(
  wi: WebhookIntegration,
  spec: SignatureSpec,
  ctx: SigningContext,
): Promise<SigningPlan | SigningRefusal> {
  const { secretRef, tolerance, rotationGracePeriod, ...settings } = spec;
  const problems = signatureProblems(settings, SPEC).map((p) => p.replace(`${SPEC}/`, `${SPEC}.`));
  if (problems.length > 0) return refuse('InvalidSpec', problems.join('; '));
  let graceMs: number;
  let toleranceSeconds: number | undefined;
  try {
    graceMs = parseDuration(rotationGracePeriod);
    toleranceSeconds = tolerance === undefined ? undefined : Math.round(parseDuration(tolerance) / 1000);
  } catch (err) {
    return refuse('InvalidSpec', `${SPEC}: ${(err as Error).message}`);
  }
  if (toleranceSeconds !== undefined && (toleranceSeconds < 1 || toleranceSeconds > 86_400))
    return refuse('InvalidSpec', `${SPEC}.tolerance must be between 1s and 24h`);
  const resolved = secretRef ? await referencedSecret(wi, spec, secretRef, ctx) : generatedSecret(wi, spec, ctx);
  if (!resolved.ok) return resolved;
  const signature: RouteSignature = {
    ...settings,
    secrets: [{ value: resolved.current }, ...carriedOver(spec, resolved.current, resolved.previous, graceMs, ctx)],
  };
  if (toleranceSeconds !== undefined) signature.toleranceSeconds = toleranceSeconds;
  return {
    ok: true,
    signature,
    ...(secretRef ? {} : { generated: resolved.current }),
    notices: resolved.notices,
  };
}

interface Resolved {
  ok: true;
  current: string;
  /** The secret this one replaces, valid for the grace period. */
  previous?: string;
  notices: SigningPlan['notices'];
}

/** The secret in the referenced Secret; a changed value makes the published one the previous. */
async function referencedSecret(
  wi: WebhookIntegration,
  spec: SignatureSpec,
  ref: { name: string; key?: string },
  ctx: SigningContext,
): Promise<Resolved | SigningRefusal> {
  const ns = wi.metadata.namespace as string;
  const key = ref.key ?? SIGNING_SECRET_KEY;
  const secret = await ctx.readSecret(ns, ref.name);
  if (!secret) return refuse('SecretNotFound', `Secret ${ns}/${ref.name} named in ${SPEC}.secretRef does not exist`);
  const value = decode(secret, key);
  if (!value) return refuse('SecretInvalid', `Secret ${ns}/${ref.name} has no ${key} key (${SPEC}.secretRef)`);
  const problem = signingSecretProblem(spec.scheme, value);
  if (problem) return refuse('SecretInvalid', `the ${key} in Secret ${ns}/${ref.name} ${problem}`);
  const published = currentOf(ctx.published, spec);
  return {
    ok: true,
    current: value,
    ...(published && published !== value ? { previous: published } : {}),
    notices: [],
  };
}

/**
 * The generated secret: kept from the credentials Secret; new when there is none, when it does not
 * fit the scheme (the scheme changed), when it was edited, or when the rotate annotation changed.
 */
function generatedSecret(wi: WebhookIntegration, spec: SignatureSpec, ctx: SigningContext): Resolved {
  const existing = decode(ctx.existingCredentials, SIGNING_SECRET_KEY);
  const secretName = credentialsSecretName(wi);
  const fresh = (notices: SigningPlan['notices'], previous?: string): Resolved => ({
    ok: true,
    current: generateSigningSecret(spec.scheme),
    ...(previous ? { previous } : {}),
    notices,
  });
  if (!existing || signingSecretProblem(spec.scheme, existing)) {
    const lost = ctx.published !== undefined && ctx.published.scheme === spec.scheme;
    return fresh(
      lost
        ? [
            {
              type: 'Warning',
              reason: 'CredentialsRegenerated',
              message: `the signing secret in Secret ${secretName} was missing; a new one was generated`,
            },
          ]
        : [],
    );
  }
  const published = currentOf(ctx.published, spec);
  if (published !== undefined && published !== existing)
    return fresh([
      {
        type: 'Warning',
        reason: 'CredentialsRegenerated',
        message: `the signingSecret in Secret ${secretName} was edited; a new one was generated (use ${SPEC}.secretRef to choose one)`,
      },
    ]);
  const rotate = wi.metadata.annotations?.[ROTATE_ANNOTATION] ?? '';
  const rotatedFor = ctx.existingCredentials?.metadata?.annotations?.[ROTATED_FOR_ANNOTATION] ?? '';
  if (rotate !== rotatedFor)
    return fresh(
      [{ type: 'Normal', reason: 'Rotated', message: `new signing secret written to Secret ${secretName}` }],
      existing,
    );
  return { ok: true, current: existing, notices: [] };
}

/** The published current secret, when the route is signed with the same scheme (a secret of another scheme is no use). */
function currentOf(published: RouteSignature | undefined, spec: SignatureSpec): string | undefined {
  if (!published || published.scheme !== spec.scheme) return undefined;
  return published.secrets.find((s) => !s.notAfter)?.value;
}

/** Secrets still inside a grace period, plus the one just replaced. */
function carriedOver(
  spec: SignatureSpec,
  current: string,
  previous: string | undefined,
  graceMs: number,
  ctx: SigningContext,
): SigningSecret[] {
  const now = ctx.now.getTime();
  const kept =
    ctx.published?.scheme === spec.scheme
      ? ctx.published.secrets.filter((s) => s.notAfter && Date.parse(s.notAfter) > now && s.value !== current)
      : [];
  if (previous !== undefined && graceMs > 0)
    kept.unshift({ value: previous, notAfter: new Date(now + graceMs).toISOString() });
  return kept.slice(0, 7);
}
