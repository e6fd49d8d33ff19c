/**
 * The route contract between operator and ingester (docs/design.md §3): one JSON document per
 * published WebhookIntegration or ApiKey. This module is the only definition of it; the operator
 * writes documents that pass `validateRoute`, the ingester reads only documents that pass it.
 */
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import routeSchema from './route.schema.json' with { type: 'json' };
import type { RouteLimits } from './limits.js';
import type { MappingSpec } from './mapping/engine.js';
import { authenticationProblems } from './signatures.js';

export const ROUTE_API_VERSION = 'intake.dev/v1alpha1';
/** Label the ingester selects route Secrets by, and the Secret data key holding the document. */
export const ROUTE_LABEL = 'intake.dev/route';
export const ROUTE_SECRET_KEY = 'route.json';

export type RouteKind = 'WebhookIntegration' | 'ApiKey';

export type SecretVerifier = { sha256: string } | { scrypt: string } | { plain: string };

export interface RouteCredential {
  username: string;
  secret: SecretVerifier;
  notBefore?: string;
  notAfter?: string;
}

/** How a WebhookIntegration's senders prove who they are (docs/signatures.md). */
export type AuthenticationMode = 'basic' | 'signature' | 'basic+signature';
export type SignatureScheme = 'standard-webhooks' | 'github' | 'grafana' | 'slack' | 'pagerduty' | 'hmac';

export interface SigningSecret {
  value: string;
  notBefore?: string;
  notAfter?: string;
}

export interface RouteSignature {
  scheme: SignatureScheme;
  secrets: SigningSecret[];
  toleranceSeconds?: number;
  header?: string;
  timestampHeader?: string;
  idHeader?: string;
  algorithm?: 'sha256' | 'sha512';
  encoding?: 'hex' | 'base64';
  prefix?: string;
  signedContent?: string;
}

export interface RouteAuthentication {
  mode: AuthenticationMode;
  signature?: RouteSignature;
}

export interface Route {
  apiVersion: typeof ROUTE_API_VERSION;
  kind: RouteKind;
  name: string;
  namespace: string;
  suspended?: boolean;
  credentials: RouteCredential[];
  /** Effective limits of the route and its namespace (api/limits.ts). */
  limits?: RouteLimits;
  /** WebhookIntegration only: the payload mapping (api/mapping/). */
  mapping?: MappingSpec;
  /** WebhookIntegration only: Basic credentials, a signature, or both (absent: basic). */
  authentication?: RouteAuthentication;
  /** WebhookIntegration only: destination names; absent means the ingester's defaults. */
  destinations?: string[];
}

// ajv-formats is CommonJS with a default export; under NodeNext its namespace object is what we get.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const ajv = new Ajv({ allErrors: true, strict: true });
addFormats(ajv);
const compiled = ajv.compile<Route>(routeSchema);

export { routeSchema };

export class RouteValidationError extends Error {
  readonly code = 'INTAKE_INVALID_ROUTE';
  constructor(readonly problems: string[]) {
    super(`invalid route: ${problems.join('; ')}`);
    this.name = 'RouteValidationError';
  }
}

/** Returns the document as a Route or throws RouteValidationError naming every problem. */
export function validateRoute(doc: unknown): Route {
  if (compiled(doc)) {
    // What the schema cannot say well: how the mode, the credentials and the signature's fields fit together.
    const problems = authenticationProblems(doc);
    if (problems.length === 0) return doc;
    throw new RouteValidationError(problems);
  }
  const problems = (compiled.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
  throw new RouteValidationError(problems);
}
