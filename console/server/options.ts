/** What `intake console` is started with (cmd/commands/console.ts), and its defaults. */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { LoginThrottleOptions } from './bounds.js';

export interface ConsoleOptions {
  kubeConfig: KubeConfig;
  mode: 'kubeconfig' | 'token';
  host: string;
  port: number;
  /** Host header values accepted; undefined: any (token mode behind an Ingress). Kubeconfig mode: loopback names. */
  allowedHosts?: string[];
  /** Replaces the scheme and host of status.url for test events (the console reaches ingesters another way). */
  ingestUrl?: string;
  /** The ingesters' admin listener, where the event inspector's captures are read (endpoints/inspector.ts). */
  ingesterAdminUrl?: string;
  /** Mark the session cookie Secure (token mode behind HTTPS). */
  secureCookie?: boolean;
  sessionTtlMs?: number;
  /** Sessions one user holds at most (a new one ends that user's oldest); default 5. */
  maxSessionsPerUser?: number;
  /** Live list streams (each two Kubernetes watches) served at once; default 200. */
  maxLiveStreams?: number;
  /** Live list streams one user holds at most (token mode); default 20. */
  maxLiveStreamsPerUser?: number;
  /** spec.mapping.tests runs one user may have going at once; default 1. */
  maxMappingRunsPerUser?: number;
  /** Worker processes that evaluate tenants' expressions for the mapping tests; default 2. */
  mappingWorkers?: number;
  /** Sign-in throttling (bounds.ts); default DEFAULT_LOGIN_THROTTLE. */
  loginThrottle?: LoginThrottleOptions;
  /** The built single-page app; default: dist/console/web next to this module. */
  webDir?: string;
  logger: Logger;
}

export interface RunningConsole {
  /** Kubeconfig mode: the URL with its one-time token. Token mode: the sign-in page. */
  url: string;
  port: number;
  close(): Promise<void>;
}

export const CONSOLE_DEFAULTS = {
  maxSessionsPerUser: 5,
  maxLiveStreams: 200,
  maxLiveStreamsPerUser: 20,
  maxMappingRunsPerUser: 1,
  mappingWorkers: 2,
  sessionTtlMs: 8 * 3600_000,
} as const;
