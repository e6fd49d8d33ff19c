/** The small labels beside an object's name: Ready (from its Ready condition), the GitOps tool that manages it, Suspended. */
import { inertText } from '../../../common/sender-text.js';
import { gitOpsOwner, isSuspended, readyCondition } from '../data/model.js';
import type { Resource } from '../data/resources.js';

export function ReadyBadge({ resource }: { resource: Resource }) {
  const ready = readyCondition(resource);
  const status = ready?.status ?? 'Unknown';
  const cls = status === 'True' ? 'ok' : status === 'False' ? 'bad' : 'unknown';
  return (
    <span
      class={`badge ${cls}`}
      title={ready?.message !== undefined ? inertText(ready.message) : 'the operator has not reported yet'}
    >
      {status === 'True' ? 'Ready' : status === 'False' ? `Not ready: ${ready?.reason ?? ''}` : 'Pending'}
    </span>
  );
}

export function GitOpsBadge({ resource }: { resource: Resource }) {
  const owner = gitOpsOwner(resource);
  if (!owner) return null;
  return (
    <span class="badge gitops" title={`managed by ${owner.tool} (${owner.owner}): change it in Git`}>
      {owner.tool}
    </span>
  );
}

export function SuspendedBadge({ resource }: { resource: Resource }) {
  return isSuspended(resource) ? <span class="badge warn">Suspended</span> : null;
}
