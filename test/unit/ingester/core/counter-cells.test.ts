/**
 * Counter cells (ingester/core/counter-cells.ts): counts kept per label set and handed to the
 * prom-client counter when the registry is read, so a scrape sees every count made before it.
 */
import { Counter, Registry } from 'prom-client';
import { CounterCells } from '../../../../ingester/core/counter-cells.js';

function counterWithCells(): { registry: Registry; cells: CounterCells<'endpoint' | 'status'> } {
  const registry = new Registry();
  const counter: Counter<'endpoint' | 'status'> = new Counter({
    name: 'requests_total',
    help: 'requests',
    labelNames: ['endpoint', 'status'],
    registers: [registry],
    collect: (): void => cells.flush(),
  });
  const cells: CounterCells<'endpoint' | 'status'> = new CounterCells(counter, (endpoint, status) => ({
    endpoint,
    status,
  }));
  return { registry, cells };
}

const valueOf = async (registry: Registry, labels: string): Promise<number | undefined> => {
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`requests_total{${labels}}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

describe('CounterCells', () => {
  it('counts per label set, and a scrape sees every count made before it', async () => {
    const { registry, cells } = counterWithCells();
    cells.add('events', 200);
    cells.add('events', 200, 2);
    cells.add('events', 429);
    cells.add('metrics', 200);
    expect(await valueOf(registry, 'endpoint="events",status="200"')).toBe(3);
    expect(await valueOf(registry, 'endpoint="events",status="429"')).toBe(1);
    expect(await valueOf(registry, 'endpoint="metrics",status="200"')).toBe(1);
    // Counts after a scrape add to what it saw; nothing is counted twice.
    cells.add('events', 200);
    expect(await valueOf(registry, 'endpoint="events",status="200"')).toBe(4);
    expect(await valueOf(registry, 'endpoint="events",status="200"')).toBe(4);
  });

  it('makes the series at its first count, even a count of 0, as Counter.inc does', async () => {
    const { registry, cells } = counterWithCells();
    expect(await valueOf(registry, 'endpoint="events",status="200"')).toBeUndefined();
    cells.add('events', 200, 0);
    expect(await valueOf(registry, 'endpoint="events",status="200"')).toBe(0);
  });

  it('refuses a count a counter cannot take at the call, not at the next scrape', async () => {
    const { registry, cells } = counterWithCells();
    expect(() => cells.add('events', 200, -1)).toThrow(TypeError);
    expect(() => cells.add('events', 200, Number.NaN)).toThrow(TypeError);
    expect(() => cells.add('events', 200, Number.POSITIVE_INFINITY)).toThrow(TypeError);
    await expect(registry.metrics()).resolves.toContain('requests_total{endpoint="events",status="200"} 0');
  });
});
