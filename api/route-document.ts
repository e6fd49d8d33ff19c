/**
 * The shape of a route document (docs/design.md §3, docs/glossary.md): the types alone, so that
 * api/route.ts (which validates a document) and api/signatures.ts (which checks how its
 * authentication fits together, for route.ts) both import it and neither imports the other.
 * Importers outside api/ take these names from api/route.ts, which re-exports them.
 */
import type { AuthenticationMode, SignatureScheme } from './authentication.js';
import type { RouteLimits } from './limits.js';
import type { MappingSpec } from './mapping/engine.js';
import type { RoutingRule } from './routing-rules.js';

export const ROUTE_API_VERSION = 'intake.dev/v1alpha1';

export type RouteKind = 'WebhookIntegration' | 'ApiKey';

export type SecretVerifier = { sha256: string } | { scrypt: string } | { plain: string };

export interface RouteCredential {
  username: string;
  secret: SecretVerifier;
  notBefore?: string;
  notAfter?: string;
}

/** How a WebhookIntegration's senders prove who they are (docs/signatures.md). */
export type { AuthenticationMode, SignatureScheme } from './authentication.js';

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
  /** WebhookIntegration only: routing rules, in order (api/routing-rules.ts). */
  rules?: RoutingRule[];
  /** WebhookIntegration only: keep the last requests for the event inspector (absent: none kept; api/inspector.ts). */
  inspect?: RouteInspect;
}

/** The event inspector for one integration: present and enabled, its last `requests` requests are kept. */
export interface RouteInspect {
  enabled: boolean;
  /** How many of its last requests are kept (default 50, at most 200). */
  requests?: number;
}
