/** Ready conditions after cert-manager's pkg/api/util/conditions.go: keep lastTransitionTime when nothing changed. */
import type { Condition } from '../api/v1alpha1/types.js';

export type ReadyReason = 'Published' | 'NameConflict' | 'SecretNotFound' | 'SecretInvalid' | 'InvalidSpec' | 'InvalidMapping' | 'UnknownDestination' | 'Suspended';

export interface ReadyState {
  status: 'True' | 'False';
  reason: ReadyReason;
  message: string;
}

export function setReady(existing: readonly Condition[] | undefined, state: ReadyState, generation: number | undefined, now: Date): Condition[] {
  const others = (existing ?? []).filter((c) => c.type !== 'Ready');
  const previous = existing?.find((c) => c.type === 'Ready');
  const lastTransitionTime = previous && previous.status === state.status ? previous.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const ready: Condition = { type: 'Ready', status: state.status, reason: state.reason, message: state.message, lastTransitionTime };
  if (generation !== undefined) ready.observedGeneration = generation;
  return [...others, ready];
}

/** A transition worth a Kubernetes Event: status or reason changed. */
export function isTransition(existing: readonly Condition[] | undefined, state: ReadyState): boolean {
  const previous = existing?.find((c) => c.type === 'Ready');
  return !previous || previous.status !== state.status || previous.reason !== state.reason;
}
