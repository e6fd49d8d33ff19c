/** Trying an integration: a test event (or dry run) sent as its sender would, the same as curl, and spec.mapping.tests. */
import type { CurlResult, MappingTestResult, SendResult } from '../../shared/console-api.js';
import { api } from './api.js';
import { resourcePath } from './resources.js';

const integrationPath = (ns: string, name: string) => resourcePath(ns, 'webhookintegrations', name);

/** `dryRun`: the ingester says what the payload maps to and where each event would go; nothing is accepted. */
export const sendTestEvent = (ns: string, name: string, payload: string, dryRun = false) =>
  api<SendResult>('POST', `${integrationPath(ns, name)}/send`, dryRun ? { payload, dryRun } : { payload });

export const curlFor = (ns: string, name: string, payload: string) =>
  api<CurlResult>('POST', `${integrationPath(ns, name)}/curl`, { payload });

export const runMappingTests = (ns: string, name: string) =>
  api<{ results: MappingTestResult[] }>('POST', `${integrationPath(ns, name)}/mapping-tests`, {});
