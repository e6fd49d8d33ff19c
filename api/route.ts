/**
 * The route contract between operator and ingester (docs/design.md §3): one JSON document per
 * published WebhookIntegration or ApiKey. This module is the only definition of it; the operator
 * writes documents that pass `validateRoute`, the ingester reads only documents that pass it.
 * The document's types live in api/route-document.ts (re-exported here), so that api/signatures.ts
 * can check a route's authentication without importing this module back.
 */
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import routeSchema from './route.schema.json' with { type: 'json' };
import type { Route } from './route-document.js';
import { ruleProblems } from './routing-rules.js';
import { authenticationProblems } from './signatures.js';

export { ROUTE_API_VERSION } from './route-document.js';
export type {
  AuthenticationMode,
  Route,
  RouteAuthentication,
  RouteCredential,
  RouteInspect,
  RouteKind,
  RouteSignature,
  SecretVerifier,
  SignatureScheme,
  SigningSecret,
} from './route-document.js';

/** Label the ingester selects route Secrets by, and the Secret data key holding the document. */
export const ROUTE_LABEL = 'intake.dev/route';
export const ROUTE_SECRET_KEY = 'route.json';

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
    const problems = [...authenticationProblems(doc), ...ruleProblems(doc.rules ?? [])];
    if (problems.length === 0) return doc;
    throw new RouteValidationError(problems);
  }
  const problems = (compiled.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
  throw new RouteValidationError(problems);
}
