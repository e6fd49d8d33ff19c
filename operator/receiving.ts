/**
 * The Receiving condition of a WebhookIntegration with spec.expectEventsWithin (a dead man's
 * switch per integration): True while the last event is recent enough, False with reason Silent
 * once it is older (or none arrived that long after creation). Its message names no moving time,
 * so a busy integration's condition never changes (no status write per event).
 */
import { parseDuration } from '../common/duration.js';
import type { WebhookIntegration } from '../api/v1alpha1/types.js';
import type { ConditionState } from './conditions.js';

export interface Receiving {
  state: ConditionState;
  silent: boolean;
  /** When the state would change if nothing arrives (a reconcile then). */
  recheckAfterMs?: number;
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** undefined: no spec.expectEventsWithin (no Receiving condition). `collecting`: the operator reads the ingesters' activity. */
export function receivingOf(
  wi: WebhookIntegration,
  lastEventTime: string | undefined,
  now: Date,
  collecting: boolean,
): Receiving | undefined {
  const within = wi.spec?.expectEventsWithin;
  if (!within) return undefined;
  let withinMs: number;
  try {
    withinMs = parseDuration(within);
  } catch (err) {
    return { silent: false, state: { status: 'Unknown', reason: 'InvalidSpec', message: (err as Error).message } };
  }
  if (!collecting)
    return {
      silent: false,
      state: {
        status: 'Unknown',
        reason: 'ActivityOff',
        message: 'the operator does not collect activity (--ingester-admin-service is not set)',
      },
    };
  const nowMs = now.getTime();
  const lastMs = lastEventTime ? Date.parse(lastEventTime) : NaN;
  if (Number.isFinite(lastMs)) {
    const age = nowMs - lastMs;
    if (age <= withinMs)
      return {
        silent: false,
        state: { status: 'True', reason: 'Receiving', message: `events arrive within ${within}` },
        recheckAfterMs: withinMs - age + 1000,
      };
    return {
      silent: true,
      state: {
        status: 'False',
        reason: 'Silent',
        message: `no event since ${iso(lastMs)} (expected within ${within})`,
      },
    };
  }
  // A Date from the typed client, an RFC 3339 string from the informer's JSON.
  const created = wi.metadata.creationTimestamp as Date | string | undefined;
  const createdMs = (created === undefined ? NaN : new Date(created).getTime()) || nowMs;
  const createdAge = nowMs - createdMs;
  if (createdAge <= withinMs)
    return {
      silent: false,
      state: {
        status: 'Unknown',
        reason: 'NoEventYet',
        message: `no event yet; expected within ${within} of creation`,
      },
      recheckAfterMs: withinMs - createdAge + 1000,
    };
  return {
    silent: true,
    state: {
      status: 'False',
      reason: 'Silent',
      message: `no event since the integration was created at ${iso(createdMs)} (expected within ${within})`,
    },
  };
}
