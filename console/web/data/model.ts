/** What the pages derive from a resource: readiness, GitOps ownership, ages. */
import { gitOpsOwner as ownerOf, type GitOps } from '../../shared/gitops.js';
import type { Condition, Resource } from './api.js';

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
