/**
 * What every group of endpoints (endpoints/) is given: the options, who is asking (auth.ts), and the
 * bounds the console's users share. Built once per console by createContext.
 */
import type { FastifyInstance } from 'fastify';
import { logWorkerPriority, MappingWorkerPool } from '../../api/mapping/worker-pool.js';
import { ConsoleAuth } from './auth.js';
import { UserSlots } from './bounds.js';
import { CONSOLE_DEFAULTS, type ConsoleOptions } from './options.js';

export interface ConsoleContext {
  options: ConsoleOptions;
  auth: ConsoleAuth;
  /** Open pages followed live: each holds two watches on the API server. */
  streams: UserSlots;
  /** spec.mapping.tests runs going at once, per user. */
  mappingRuns: UserSlots;
  /** Worker processes that run tenants' expressions for the mapping tests (never this process). */
  mappingWorkers: MappingWorkerPool;
}

/** One group of the console's endpoints (endpoints/<area>.ts), registered by main.ts from endpoints/index.ts. */
export type ConsoleEndpoints = (app: FastifyInstance, ctx: ConsoleContext) => void;

export function createContext(options: ConsoleOptions): ConsoleContext {
  return {
    options,
    auth: new ConsoleAuth(options),
    // Each open page holds two watches on the API server: a bounded number at once, and in token
    // mode (many users) a bounded share of them per user.
    streams: new UserSlots({
      perUser:
        options.mode === 'token' ? (options.maxLiveStreamsPerUser ?? CONSOLE_DEFAULTS.maxLiveStreamsPerUser) : Infinity,
      total: options.maxLiveStreams ?? CONSOLE_DEFAULTS.maxLiveStreams,
      what: 'open pages followed live',
      advice: 'close a tab of the console, or wait',
      perUserCode: 'too_many_streams_for_user',
      perUserSetting: '--max-live-streams-per-user',
      totalCode: 'too_many_streams',
      totalSetting: '--max-live-streams',
      retryAfterSeconds: 10,
    }),
    // One run at a time per user (a run evaluates its tests one after another), so each user holds
    // at most one worker and one place in the workers' queue: the others' runs are not held up.
    mappingRuns: new UserSlots({
      perUser: options.maxMappingRunsPerUser ?? CONSOLE_DEFAULTS.maxMappingRunsPerUser,
      total: Infinity,
      what: 'spec.mapping.tests runs going at once',
      advice: 'wait for your run to end',
      perUserCode: 'mapping_tests_running',
      perUserSetting: '--max-mapping-runs-per-user',
      totalCode: 'mapping_busy',
      totalSetting: '',
      retryAfterSeconds: 2,
    }),
    // Tenants' expressions in spec.mapping.tests run in worker processes under SCHED_IDLE, killed at
    // the CPU limit (worker-pool.ts), never in this process: a runaway expression or regular
    // expression cannot hold the console's other users. Started when a test first needs one.
    mappingWorkers: new MappingWorkerPool({
      size: options.mappingWorkers ?? CONSOLE_DEFAULTS.mappingWorkers,
      onWorkerLost: (reason) => options.logger.warn({ reason }, 'mapping test worker killed or ended, and replaced'),
      onFirstWorker: logWorkerPriority(options.logger, 'mapping test workers'),
    }),
  };
}
