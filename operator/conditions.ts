/** Ready conditions after cert-manager's pkg/api/util/conditions.go: keep lastTransitionTime when nothing changed. */
import type { Condition } from '../api/v1alpha1/types.js';
import { inertText } from '../common/sender-text.js';

export type ReadyReason =
  | 'Published'
  | 'NameConflict'
  | 'SecretNotFound'
  | 'SecretInvalid'
  | 'InvalidSpec'
  | 'InvalidMapping'
  | 'UnknownDestination'
  | 'Suspended'
  | 'TooManyDestinations'
  | 'DestinationNotReady';

export interface ReadyState {
  status: 'True' | 'False';
  reason: ReadyReason;
  message: string;
}

export function setReady(
  existing: readonly Condition[] | undefined,
  state: ReadyState,
  generation: number | undefined,
  now: Date,
): Condition[] {
  return setCondition(existing, 'Ready', state, generation, now);
}

/** Throttled: True (reason Clamped) when spec.limits asks for more than the namespace's quota allows. */
export interface ConditionState {
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

/** Sets one condition in place (others keep their order), keeping lastTransitionTime while the status is unchanged. */
export function setCondition(
  existing: readonly Condition[] | undefined,
  type: string,
  state: ConditionState,
  generation: number | undefined,
  now: Date,
): Condition[] {
  const previous = existing?.find((c) => c.type === type);
  const lastTransitionTime =
    previous && previous.status === state.status
      ? previous.lastTransitionTime
      : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const condition: Condition = {
    type,
    status: state.status,
    reason: state.reason,
    // A message may quote what a tenant wrote (a mapping's error, a spec's value): read in
    // kubectl describe and the console, so inert (common/sender-text.ts).
    message: inertText(state.message),
    lastTransitionTime,
  };
  if (generation !== undefined) condition.observedGeneration = generation;
  const list = [...(existing ?? [])];
  const at = list.findIndex((c) => c.type === type);
  if (at >= 0) list[at] = condition;
  else list.push(condition);
  return list;
}

/** A transition worth a Kubernetes Event: status or reason changed. */
export function isTransition(
  existing: readonly Condition[] | undefined,
  state: ConditionState,
  type = 'Ready',
): boolean {
  const previous = existing?.find((c) => c.type === type);
  return !previous || previous.status !== state.status || previous.reason !== state.reason;
}
