import type { DataPoint } from '../../../../ingester/series/data-points.js';
import { IntakeError } from '../../../../ingester/core/errors.js';
import { SeriesStore } from '../../../../ingester/series/series-store.js';

const point = (over: Partial<DataPoint> = {}): DataPoint => ({
  metric: 'cpu.load',
  value: 1,
  source: 'h1',
  key: '',
  tags: {},
  ...over,
});

function store(over: Partial<ConstructorParameters<typeof SeriesStore>[0]> = {}) {
  let now = 1_000_000;
  const s = new SeriesStore({ ttlMs: 60_000, maxSeriesTotal: 10, maxSeriesPerNamespace: 5, now: () => now, ...over });
  return { s, advance: (ms: number) => (now += ms) };
}

describe('SeriesStore', () => {
  it('validates its options in the constructor', () => {
    expect(() => new SeriesStore({ ttlMs: 0, maxSeriesTotal: 1, maxSeriesPerNamespace: 1 })).toThrow(/ttlMs/);
  });

  it('renders gauges with sanitised names, sorted labels and HELP from description', () => {
    const { s } = store();
    s.write('ns', [
      point({ metric: '9 disk/used%', description: 'Disk used\nin percent', tags: { 'mount point': '/', env: 'a"b' } }),
    ]);
    expect(s.render()).toBe(
      '# HELP _9_disk_used_ Disk used\\nin percent\n# TYPE _9_disk_used_ gauge\n' +
        '_9_disk_used_{env="a\\"b",key="",mount_point="/",namespace="ns",source="h1"} 1\n',
    );
  });

  it('renames tags that collide with reserved labels', () => {
    const { s } = store();
    s.write('ns', [point({ tags: { source: 'x', job: 'y', __meta: 'z' } })]);
    expect(s.render()).toContain('{key="",namespace="ns",source="h1",tag__meta="z",tag_job="y",tag_source="x"}');
  });

  it('keeps the newest value by the sender clock', () => {
    const { s } = store();
    s.write('ns', [point({ value: 2, timeMs: 2000 })]);
    s.write('ns', [point({ value: 1, timeMs: 1000 })]);
    expect(s.render()).toContain('} 2\n');
  });

  it('drops idle series after the TTL and frees their place under the cap', () => {
    const { s, advance } = store({ maxSeriesPerNamespace: 1 });
    s.write('ns', [point({ key: 'a' })]);
    advance(61_000);
    expect(s.render()).toBe('');
    s.write('ns', [point({ key: 'b' })]);
    expect(s.activeSeries).toBe(1);
  });

  it('refuses a batch past the per-namespace cap whole, with a 429 naming the cap', () => {
    const { s } = store({ maxSeriesPerNamespace: 2 });
    s.write('ns', [point({ key: 'a' })]);
    let err: unknown;
    try {
      s.write('ns', [point({ key: 'a', value: 5 }), point({ key: 'b' }), point({ key: 'c' })]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(IntakeError);
    expect((err as IntakeError).statusCode).toBe(429);
    expect((err as IntakeError).message).toMatch(/namespace ns.*cap 2/);
    expect(s.render()).toContain('} 1\n');
    expect(s.activeSeries).toBe(1);
  });

  it('applies a per-route cap over the default', () => {
    const { s } = store();
    expect(() => s.write('ns', [point({ key: 'a' }), point({ key: 'b' })], 1)).toThrow(/cap 1/);
  });

  it('enforces the global cap across namespaces', () => {
    const { s } = store({ maxSeriesTotal: 3 });
    s.write('a', [point({ key: '1' }), point({ key: '2' })]);
    expect(() => s.write('b', [point({ key: '1' }), point({ key: '2' })])).toThrow(/global series cap/);
    expect(s.namespaceSeries().get('b')).toBeUndefined();
  });

  it('counts a repeated new series once within a batch', () => {
    const { s } = store({ maxSeriesPerNamespace: 1 });
    s.write('ns', [point({ value: 1 }), point({ value: 2 })]);
    expect(s.activeSeries).toBe(1);
  });

  it('shows HELP only while every namespace that gave a description agrees', () => {
    const { s } = store();
    s.write('a', [point({ description: 'from a' })]);
    expect(s.render()).toContain('# HELP cpu_load from a\n');
    s.write('b', [point({ description: 'from b' })]);
    expect(s.render()).not.toContain('# HELP');
    s.write('b', [point({ description: 'from a' })]);
    expect(s.render()).toContain('# HELP cpu_load from a\n');
  });

  it('renders in chunks whose size does not grow with the number of series', () => {
    const { s } = store({ maxSeriesTotal: 5000, maxSeriesPerNamespace: 5000 });
    s.write(
      'ns',
      Array.from({ length: 4000 }, (_, i) => point({ key: `k${i}`, tags: { long: 'v'.repeat(200) } })),
    );
    const chunks = [...s.chunks()];
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) expect(c.length).toBeLessThan(300 * 1024);
    expect(chunks.join('')).toBe(s.render());
    expect(s.render().match(/^cpu_load\{/gm)).toHaveLength(4000);
  });

  it('tells series apart that differ only at the end of long label texts', () => {
    const { s } = store({ maxSeriesTotal: 100, maxSeriesPerNamespace: 100 });
    const long = (i: number) => point({ tags: { t: `${'x'.repeat(20_000)}${i}` }, value: i });
    s.write('ns', [long(1), long(2)]);
    s.write('ns', [long(1)]);
    expect(s.activeSeries).toBe(2);
  });
});
