/** An integration's captured requests (docs/inspector.md), read as the user: 403 without the verb `inspect`. */
import type { CapturedRequest, CapturedRequestSummary } from '../../../api/inspector.js';
import { api } from './api.js';
import { resourcePath } from './resources.js';

const inspectorPath = (ns: string, name: string, rest = '') =>
  `${resourcePath(ns, 'webhookintegrations', name)}/inspector${rest}`;

export const listCaptured = (ns: string, name: string) =>
  api<{ requests: CapturedRequestSummary[] }>('GET', inspectorPath(ns, name));

export const readCaptured = (ns: string, name: string, id: string) =>
  api<CapturedRequest>('GET', inspectorPath(ns, name, `/${encodeURIComponent(id)}`));

/** Hands event `event` of the captured request to its destinations again; answers the new event's id. */
export const replayCaptured = (ns: string, name: string, id: string, event: number) =>
  api<{ id: string }>('POST', inspectorPath(ns, name, `/${encodeURIComponent(id)}/replay`), { event });
