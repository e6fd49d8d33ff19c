/** What the pages derive from a resource: readiness, GitOps ownership, ages, how senders authenticate, what a rotation renews. */
import type { AuthenticationMode } from '../../../api/authentication.js';
import { gitOpsOwner as ownerOf, type GitOps } from '../../shared/gitops.js';
import type { Condition, Plural, Resource } from './resources.js';

export const readyCondition = (r: Resource): Condition | undefined =>
  r.status?.conditions?.find((c) => c.type === 'Ready');

/**
 * Managed by Argo CD or Flux (their labels and annotations): the console does not edit such an
 * object, since the next sync would undo the edit; the change belongs in Git.
 */
export const gitOpsOwner = (r: Resource): GitOps | undefined => ownerOf(r.metadata);

/** "5 s ago", "3 min ago", "2 h ago", "4 d ago". */
export function age(time: string | undefined, now = Date.now()): string {
  if (!time) return '';
  const t = Date.parse(time);
  if (Number.isNaN(t)) return time;
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 90) return `${s} s ago`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export const isSuspended = (r: Resource): boolean => r.spec?.suspend === true;

/** A page's address: #/ns/<namespace>/... with each part encoded. */
export const href = (...parts: string[]): string => `#/${parts.map(encodeURIComponent).join('/')}`;

interface AuthenticationSpec {
  mode?: AuthenticationMode;
  signature?: { scheme?: string; secretRef?: unknown; rotationGracePeriod?: string };
}

/** spec.authentication: how the integration's senders authenticate (docs/signatures.md); an API key by its key. */
export function authenticationOf(plural: Plural, r: Resource): { mode: AuthenticationMode; scheme?: string } {
  if (plural === 'apikeys') return { mode: 'basic' };
  const auth = r.spec?.authentication as AuthenticationSpec | undefined;
  return { mode: auth?.mode ?? 'basic', ...(auth?.signature?.scheme ? { scheme: auth.signature.scheme } : {}) };
}

export interface Rotation {
  /** What a rotation renews: the generated password or key, the generated signing secret. */
  renews: string[];
  /** The word for the password: "key" for an API key. */
  passwordWord: string;
  /** The grace period the previous secret keeps working, as the spec says it (Go duration). */
  grace?: string;
  /** What the grace period applies to. */
  graceWord: string;
}

/**
 * What a rotation renews: the generated password (or key) and, for a signed integration, the
 * generated signing secret; a secret from the user's own Secret (secretRef) is rotated there.
 */
export function rotationOf(plural: Plural, r: Resource): Rotation {
  const { mode } = authenticationOf(plural, r);
  const signature = (r.spec?.authentication as AuthenticationSpec | undefined)?.signature;
  const credentials = r.spec?.credentials as { secretRef?: unknown; rotationGracePeriod?: string } | undefined;
  const passwordWord = plural === 'apikeys' ? 'key' : 'password';
  const renews = [
    ...(mode !== 'signature' && !credentials?.secretRef ? [passwordWord] : []),
    ...(mode !== 'basic' && !signature?.secretRef ? ['signing secret'] : []),
  ];
  const grace =
    mode === 'signature'
      ? signature?.rotationGracePeriod
      : plural === 'apikeys'
        ? (r.spec?.rotationGracePeriod as string | undefined)
        : credentials?.rotationGracePeriod;
  return {
    renews,
    passwordWord,
    ...(grace !== undefined ? { grace } : {}),
    graceWord: mode === 'signature' ? 'signing secret' : passwordWord,
  };
}
