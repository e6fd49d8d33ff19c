/** Metrics of the mapped webhook pipeline and the dead letter, on the injected registry. */
import { Counter, type Registry } from 'prom-client';

export type MappingFailureReason = 'evaluation' | 'guardrail' | 'no_events' | 'invalid_events';

export class MappingMetrics {
  readonly failures: Counter<'integration' | 'namespace' | 'reason'>;
  readonly deadLettered: Counter<'integration' | 'namespace'>;
  readonly cpuSeconds: Counter<'integration' | 'namespace'>;
  readonly workerRestarts: Counter;

  /** The dead letter's own metrics (dropped, replayed, bytes) are in dead-letters/metrics.ts. */
  constructor(registry: Registry) {
    const registers = [registry];
    this.failures = new Counter({
      name: 'intake_mapping_failures_total',
      help: 'Authenticated payloads a mapping could not turn into valid events (answered 422), by reason.',
      labelNames: ['integration', 'namespace', 'reason'],
      registers,
    });
    this.deadLettered = new Counter({
      name: 'intake_deadletter_payloads_total',
      help: 'Payloads kept in the dead letter, by integration.',
      labelNames: ['integration', 'namespace'],
      registers,
    });
    this.cpuSeconds = new Counter({
      name: 'intake_mapping_cpu_seconds_total',
      help: 'CPU time mappings used (successful or not), by integration.',
      labelNames: ['integration', 'namespace'],
      registers,
    });
    this.workerRestarts = new Counter({
      name: 'intake_mapping_worker_restarts_total',
      help: 'Mapping worker processes killed or ended (an expression past its CPU limit or heap cap) and replaced.',
      registers,
    });
  }
}
