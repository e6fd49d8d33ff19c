/**
 * What a team's `Destination` should produce, decided from the spec and the Secrets it names (no
 * writes): the document to publish for the ingesters (api/destination-document.ts) or none, and
 * its conditions. Credentials and TLS material are read from Secrets of the Destination's own
 * namespace only: a reference has no namespace field, and the namespace used is the resource's.
 */
import type { V1Secret } from '@kubernetes/client-node';
import {
  destinationDocumentProblems,
  teamDestinationName,
  type DestinationDocument,
  type InlineAuth,
} from '../api/destination-document.js';
import type { Destination, DestinationAuthSpec, SecretKeyRef } from '../api/v1alpha1/types.js';
import type { ConditionState, ReadyState } from './conditions.js';

export interface DestinationPlan {
  ready: ReadyState;
  paused: ConditionState;
  circuitOpen: ConditionState;
  /** Absent: nothing is published (and what was is removed: the ingesters stop delivering to it). */
  document?: DestinationDocument;
  /** `<namespace>/<name>`: the ingesters' name for it (metrics, dead letters, logs). */
  destinationName: string;
}

export interface DestinationPlanContext {
  /** Reads a Secret of the namespace (not cached: the team's Secrets carry no label of ours). */
  readSecret: (namespace: string, name: string) => Promise<V1Secret | undefined>;
  /** The platform's destination names (--destinations): a team destination of the same name shadows it in its namespace. */
  platformDestinations: readonly string[];
  /** How many of the namespace's Destinations are older than this one, and how many are published. */
  olderInNamespace?: number;
  maxPerNamespace?: number;
}

const CIRCUIT_UNKNOWN: ConditionState = {
  status: 'Unknown',
  reason: 'NotReported',
  message: "the ingesters do not report this destination's circuit yet",
};

class SecretProblem extends Error {
  constructor(
    readonly reason: 'SecretNotFound' | 'SecretInvalid',
    message: string,
  ) {
    super(message);
  }
}

export async function planDestination(d: Destination, ctx: DestinationPlanContext): Promise<DestinationPlan> {
  const namespace = d.metadata.namespace as string;
  const name = d.metadata.name as string;
  const destinationName = teamDestinationName(namespace, name);
  const suspended = d.spec?.suspend === true;
  const paused: ConditionState = suspended
    ? { status: 'True', reason: 'Suspended', message: 'spec.suspend is true: events are held, not delivered' }
    : { status: 'False', reason: 'Active', message: 'delivering' };
  const notReady = (reason: ReadyState['reason'], message: string): DestinationPlan => ({
    ready: { status: 'False', reason, message },
    paused,
    circuitOpen: CIRCUIT_UNKNOWN,
    destinationName,
  });
  if (ctx.maxPerNamespace !== undefined && (ctx.olderInNamespace ?? 0) >= ctx.maxPerNamespace)
    return notReady(
      'TooManyDestinations',
      `the namespace has ${ctx.maxPerNamespace} older Destinations, the most published (--max-destinations-per-namespace); delete one to publish this`,
    );
  const spec = d.spec ?? {};
  if ((spec.alertmanager === undefined) === (spec.http === undefined))
    return notReady('InvalidSpec', 'give exactly one of spec.alertmanager or spec.http');
  const doc: DestinationDocument = { apiVersion: 'intake.dev/v1alpha1', kind: 'Destination', name, namespace };
  if (suspended) doc.suspend = true;
  try {
    if (spec.alertmanager) {
      const { basicAuth: _b, bearerToken: _t, tls: _tls, ...rest } = spec.alertmanager;
      doc.alertmanager = { ...rest, ...(await inlineAuth(spec.alertmanager, 'spec.alertmanager', namespace, ctx)) };
    }
    if (spec.http) {
      const { basicAuth: _b, bearerToken: _t, tls: _tls, ...rest } = spec.http;
      doc.http = { ...rest, ...(await inlineAuth(spec.http, 'spec.http', namespace, ctx)) };
    }
  } catch (err) {
    if (err instanceof SecretProblem) return notReady(err.reason, err.message);
    throw err;
  }
  if (spec.delivery) doc.delivery = spec.delivery;
  if (spec.circuitBreaker) doc.circuitBreaker = spec.circuitBreaker;
  if (spec.rateLimit) doc.rateLimit = spec.rateLimit;
  if (spec.autoPause) doc.autoPause = spec.autoPause;
  const problems = destinationDocumentProblems(doc);
  if (problems.length > 0)
    return notReady('InvalidSpec', `cannot be published: ${problems.map(inSpecTerms).join('; ')}`);
  const shadows = ctx.platformDestinations.includes(name)
    ? `; the namespace's integrations naming ${name} use this destination, not the platform's of the same name`
    : '';
  return {
    ready: {
      status: 'True',
      reason: 'Published',
      message: `published to the ingesters as ${destinationName}${shadows}`,
    },
    paused,
    circuitOpen: CIRCUIT_UNKNOWN,
    document: doc,
    destinationName,
  };
}

/** A problem in the document's terms ("/http/timeout must match ...") in the spec's. */
const inSpecTerms = (problem: string): string =>
  problem.startsWith('/') ? `spec${problem.replace(/^(\S*)/, (path) => path.replace(/\//g, '.'))}` : `spec.${problem}`;

/** The credentials and TLS material a kind's block names, read from Secrets of `namespace`. */
async function inlineAuth(
  spec: DestinationAuthSpec,
  where: string,
  namespace: string,
  ctx: DestinationPlanContext,
): Promise<InlineAuth> {
  const out: InlineAuth = {};
  if (spec.basicAuth) {
    const ref = spec.basicAuth.secretRef;
    const secret = await read(ref, `${where}.basicAuth.secretRef`, namespace, ctx);
    const password = value(secret, ref.key ?? 'password', ref, namespace, true) as string;
    const username = spec.basicAuth.username ?? value(secret, 'username', ref, namespace, false);
    if (!username)
      throw new SecretProblem(
        'SecretInvalid',
        `${where}.basicAuth: give username, or a username key in Secret ${namespace}/${ref.name}`,
      );
    out.basicAuth = { username, password };
  }
  if (spec.bearerToken) {
    const ref = spec.bearerToken.secretRef;
    const secret = await read(ref, `${where}.bearerToken.secretRef`, namespace, ctx);
    out.bearerToken = value(secret, ref.key ?? 'token', ref, namespace, true) as string;
  }
  if (spec.tls) {
    const tls: NonNullable<InlineAuth['tls']> = {};
    const ref = spec.tls.secretRef;
    if (ref) {
      const secret = await read(ref, `${where}.tls.secretRef`, namespace, ctx);
      const ca = value(secret, 'ca.crt', ref, namespace, false);
      const cert = value(secret, 'tls.crt', ref, namespace, false);
      const key = value(secret, 'tls.key', ref, namespace, false);
      if (ca === undefined && cert === undefined)
        throw new SecretProblem(
          'SecretInvalid',
          `Secret ${namespace}/${ref.name} named in ${where}.tls.secretRef has neither ca.crt nor tls.crt`,
        );
      if (ca !== undefined) tls.ca = ca;
      if (cert !== undefined) tls.cert = cert;
      if (key !== undefined) tls.key = key;
    }
    if (spec.tls.insecureSkipVerify) tls.insecureSkipVerify = true;
    out.tls = tls;
  }
  return out;
}

async function read(
  ref: { name: string },
  field: string,
  namespace: string,
  ctx: DestinationPlanContext,
): Promise<V1Secret> {
  const secret = await ctx.readSecret(namespace, ref.name);
  if (!secret)
    throw new SecretProblem('SecretNotFound', `Secret ${namespace}/${ref.name} named in ${field} does not exist`);
  return secret;
}

function value(
  secret: V1Secret,
  key: string,
  ref: SecretKeyRef,
  namespace: string,
  required: boolean,
): string | undefined {
  const encoded = secret.data?.[key];
  const text = encoded === undefined ? secret.stringData?.[key] : Buffer.from(encoded, 'base64').toString('utf8');
  if (text === undefined || text === '') {
    if (required) throw new SecretProblem('SecretInvalid', `Secret ${namespace}/${ref.name} has no ${key} key`);
    return undefined;
  }
  return text;
}
