import { ConfigError, parseListen } from '../../../common/config-files.js';
import { resolveSettings } from '../../../ingester/config.js';

describe('settings', () => {
  it.each([
    ['127.0.0.1:8080', { host: '127.0.0.1', port: 8080 }],
    ['[::1]:9000', { host: '::1', port: 9000 }],
    [':80', { host: '0.0.0.0', port: 80 }],
  ])('parses listen %s', (value, expected) => {
    expect(parseListen(value, 'listen')).toEqual(expected);
  });

  it.each([['8080'], ['host:99999'], ['a:b']])('refuses listen %s with a message naming the flag', (value) => {
    expect(() => parseListen(value, '--listen')).toThrow(/--listen/);
  });

  it('lets flags win over the file and the file over defaults', () => {
    const s = resolveSettings(
      { listen: '127.0.0.1:9000', limits: { eventsPerRequest: 5 } },
      { listen: '127.0.0.1:9100' },
    );
    expect(s.listen.port).toBe(9100);
    expect(s.limits.eventsPerRequest).toBe(5);
    expect(s.limits.pointsPerRequest).toBe(10000);
  });

  it('names unknown and invalid keys', () => {
    expect(() => resolveSettings({ limts: {} }, {})).toThrow(/limts/);
    expect(() => resolveSettings({ limits: { bodyBytes: -1 } }, {})).toThrow(ConfigError);
  });

  it.each([
    [true, /true would let any client/],
    [1, /hop counts are not supported/],
    ['10.0.0.0/8, evil', /"evil" is not an IP address or CIDR/],
  ])('refuses trustProxy %p', (trustProxy, message) => {
    expect(() => resolveSettings({ trustProxy }, {})).toThrow(message);
  });

  it('accepts proxy addresses, CIDRs and range names for trustProxy', () => {
    expect(resolveSettings({ trustProxy: '10.0.0.0/8, 192.0.2.1, uniquelocal, 2001:db8::/32' }, {}).trustProxy).toBe(
      '10.0.0.0/8, 192.0.2.1, uniquelocal, 2001:db8::/32',
    );
  });

  it('needs both TLS files and distinct listeners', () => {
    expect(() => resolveSettings({}, { tlsCert: 'c.pem' })).toThrow(/both/);
    expect(() => resolveSettings({}, { listen: '127.0.0.1:1', adminListen: '127.0.0.1:1' })).toThrow(/differ/);
  });
});

describe('shares and their wholes', () => {
  it.each([
    ['limits', 'maxSeriesPerNamespace', 'maxSeriesTotal', 1000],
    ['limits', 'maxConnectionsPerAddress', 'maxConnections', 100],
    ['limits', 'maxInFlightBodyBytesPerNamespace', 'maxInFlightBodyBytes', 1 << 20],
    ['limits', 'maxUnauthenticatedBodyBytesPerAddress', 'maxUnauthenticatedBodyBytes', 1 << 20],
    ['limits', 'maxUnauthenticatedBodyBytesPerIntegration', 'maxUnauthenticatedBodyBytes', 1 << 20],
    ['mapping', 'maxWorkersPerNamespace', 'workers', 2],
    ['mapping', 'maxQueuedPerNamespace', 'maxQueued', 10],
    ['mapping', 'maxQueuedBytesPerNamespace', 'maxQueuedBytes', 1 << 20],
    ['deadLetter', 'maxBytesPerNamespace', 'maxBytes', 1 << 20],
  ] as const)('%s.%s above %s is refused, naming both; equal is accepted', (block, share, whole, size) => {
    expect(() => resolveSettings({ [block]: { [whole]: size, [share]: size + 1 } }, {})).toThrow(
      new RegExp(`${block}\\.${share} \\(${size + 1}\\) must not exceed ${block}\\.${whole} \\(${size}\\)`),
    );
    const s = resolveSettings({ [block]: { [whole]: size, [share]: size } }, {}) as unknown as Record<
      string,
      Record<string, number>
    >;
    expect(s[block]?.[share]).toBe(size);
  });

  it('lowers a default share to a smaller whole that was given', () => {
    const s = resolveSettings({ limits: { maxInFlightBodyBytes: 1 << 20, maxSeriesTotal: 500 } }, {});
    expect(s.limits.maxInFlightBodyBytesPerNamespace).toBe(1 << 20);
    expect(s.limits.maxSeriesPerNamespace).toBe(500);
    expect(resolveSettings({ deadLetter: { maxBytes: 1 << 20 } }, {}).deadLetter.maxBytesPerNamespace).toBe(1 << 20);
  });

  it('bulk replays: defaults, a partial block keeps the others, out-of-bounds values refused', () => {
    expect(resolveSettings({}, {}).deadLetter.bulkReplay).toEqual({
      maxRunning: 4,
      maxRate: 1000,
      allNamespaces: 'shared',
    });
    expect(
      resolveSettings({ deadLetter: { maxBytes: 1 << 20, bulkReplay: { allNamespaces: 'exclusive' } } }, {}).deadLetter,
    ).toMatchObject({ maxBytes: 1 << 20, bulkReplay: { maxRunning: 4, maxRate: 1000, allNamespaces: 'exclusive' } });
    for (const bulkReplay of [{ maxRunning: 0 }, { maxRate: 0 }, { allNamespaces: 'all' }, { maxParallel: 2 }])
      expect(() => resolveSettings({ deadLetter: { bulkReplay } }, {})).toThrow(ConfigError);
  });

  it('fits a given worker share to the default worker count (which follows the cores)', () => {
    const s = resolveSettings({ mapping: { maxWorkersPerNamespace: 64 } }, {});
    expect(s.mapping.maxWorkersPerNamespace).toBe(s.mapping.workers);
  });
});

describe('readYamlFile', () => {
  it('reports where a file is broken without quoting it (it may hold passwords)', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { readYamlFile } = await import('../../../common/config-files.js');
    const path = join(mkdtempSync(join(tmpdir(), 'intake-cfg-')), 'bad.yaml');
    writeFileSync(path, 'routes:\n  - secret: {plain: hunter2\n');
    expect(() => readYamlFile(path)).toThrow(/not valid YAML at line \d+/);
    expect(() => readYamlFile(path)).not.toThrow(/hunter2/);
  });
});

describe('hand-off settings', () => {
  it('applies JetStream and spool defaults and turns the log sink off with JetStream', () => {
    const s = resolveSettings(
      { sinks: { jetstream: { url: 'nats://127.0.0.1:4222' } }, spool: { path: '/var/lib/intake/spool' } },
      {},
    );
    expect(s.sinks.jetstream).toMatchObject({
      servers: ['nats://127.0.0.1:4222'],
      stream: 'INTAKE_EVENTS',
      subjectPrefix: 'intake.events',
      createStream: true,
      timeoutMs: 2000,
    });
    expect(s.sinks.jetstream?.streamConfig.duplicateWindowSeconds).toBe(900);
    expect(s.sinks.jetstream?.streamConfig.maxAgeSeconds).toBe(72 * 3600);
    expect(s.spool).toMatchObject({ path: '/var/lib/intake/spool', maxBytes: 1073741824 });
    expect(s.sinks.log.enabled).toBe(false);
    expect(resolveSettings({}, {}).sinks.log.enabled).toBe(true);
  });

  it("gives each namespace a quarter of the spool unless told, and refuses a share above the spool's size", () => {
    const bus = { jetstream: { url: 'nats://127.0.0.1:4222' } };
    expect(
      resolveSettings({ sinks: bus, spool: { path: '/s', maxBytes: 4 << 20 } }, {}).spool?.maxBytesPerNamespace,
    ).toBe(1 << 20);
    expect(
      resolveSettings({ sinks: bus, spool: { path: '/s', maxBytes: 4 << 20, maxBytesPerNamespace: 3 << 20 } }, {}).spool
        ?.maxBytesPerNamespace,
    ).toBe(3 << 20);
    expect(() =>
      resolveSettings({ sinks: bus, spool: { path: '/s', maxBytes: 1 << 20, maxBytesPerNamespace: 2 << 20 } }, {}),
    ).toThrow(/spool: maxBytesPerNamespace \(2097152\) must be at most maxBytes \(1048576\)/);
  });

  it('refuses a duplicate window under 15 minutes and two credentials; takes a spool without a bus (for dead letters)', () => {
    expect(() =>
      resolveSettings({ sinks: { jetstream: { url: 'nats://x', streamConfig: { duplicateWindow: '2m' } } } }, {}),
    ).toThrow(/sinks\.jetstream\.streamConfig\.duplicateWindow: "2m" is too short: at least 15m/);
    expect(() =>
      resolveSettings({ sinks: { jetstream: { url: 'nats://x', streamConfig: { maxAge: '1m' } } } }, {}),
    ).toThrow(/maxAge \(1m\) must be 0s or at least duplicateWindow \(15m\)/);
    expect(resolveSettings({ spool: { path: '/tmp/s' } }, {}).spool?.path).toBe('/tmp/s');
    expect(() => resolveSettings({ sinks: { log: { enabled: false } } }, {})).toThrow(/events must go somewhere/);
    expect(
      resolveSettings(
        {
          sinks: { log: { enabled: false } },
          spool: { path: '/tmp/x' },
          destinations: [{ name: 'am', alertmanager: { urls: ['http://127.0.0.1:9093'] } }],
        },
        {},
      ).sinks.log.enabled,
    ).toBe(false);
    expect(() =>
      resolveSettings({ sinks: { jetstream: { url: 'nats://x', credsFile: 'a', nkeySeedFile: 'b' } } }, {}),
    ).toThrow(/not both/);
  });
});

describe('hand-off subjects', () => {
  const jetstream = ({ deadLetterSubjectPrefix, ...o }: Record<string, unknown>) =>
    resolveSettings(
      { sinks: { jetstream: { url: 'nats://x', ...o } }, deadLetter: { subjectPrefix: deadLetterSubjectPrefix } },
      {},
    );

  it.each([
    ['intake.events', 'intake.events'],
    ['intake.events.dead', 'intake.events'],
    ['intake', 'intake.events'],
  ])('refuses deadLetterSubjectPrefix %s beside subjectPrefix %s', (deadLetterSubjectPrefix, subjectPrefix) => {
    expect(() => jetstream({ subjectPrefix, deadLetterSubjectPrefix })).toThrow(/must not contain one another/);
  });

  it.each([
    ['intake.deadletter', 'intake.events'],
    ['intake.events-multi', 'intake.events'],
    ['intake.events-multiple', 'intake.events'],
    ['intake.eventsmulti', 'intake.events'],
    ['a.b-multi', 'a.b.c'],
  ])('takes deadLetterSubjectPrefix %s beside subjectPrefix %s', (deadLetterSubjectPrefix, subjectPrefix) => {
    expect(jetstream({ subjectPrefix, deadLetterSubjectPrefix }).sinks.jetstream?.deadLetterSubjectPrefix).toBe(
      deadLetterSubjectPrefix,
    );
  });
});

describe('mapping settings', () => {
  it('bound the mapped output at four times the body limit unless given, and take the worker settings', () => {
    const defaults = resolveSettings({}, {});
    expect(defaults.mapping).toMatchObject({
      maxOutputBytes: 4 * 1024 * 1024,
      maxEvents: 10_000,
      maxQueued: 64,
      maxQueuedBytes: 16 * 1024 * 1024,
      workerHeapMb: 128,
    });
    expect(defaults.mapping.workers).toBeGreaterThanOrEqual(2);
    expect(defaults.limits.maxJsonDepth).toBe(64);
    expect(resolveSettings({ limits: { bodyBytes: 2 * 1024 * 1024 } }, {}).mapping.maxOutputBytes).toBe(
      8 * 1024 * 1024,
    );
    expect(
      resolveSettings({ limits: { bodyBytes: 2 * 1024 * 1024 }, mapping: { maxOutputBytes: 1000, workers: 1 } }, {})
        .mapping,
    ).toMatchObject({ maxOutputBytes: 1000, workers: 1 });
  });

  it('refuses a worker heap too small to load the engine', () => {
    expect(() => resolveSettings({ mapping: { workerHeapMb: 4 } }, {})).toThrow(/workerHeapMb/);
  });

  it('takes adminAllowedHosts as DNS names, lower case, and refuses addresses, ports and patterns', () => {
    expect(resolveSettings({}, {}).adminAllowedHosts).toEqual([]);
    expect(resolveSettings({ adminAllowedHosts: ['Intake-Admin.intake.svc.'] }, {}).adminAllowedHosts).toEqual([
      'intake-admin.intake.svc',
    ]);
    for (const bad of ['10.0.0.1', 'admin:8081', '*.intake.svc', ''])
      expect(() => resolveSettings({ adminAllowedHosts: [bad] }, {})).toThrow(
        /adminAllowedHosts: .* is not a DNS name/,
      );
    expect(() => resolveSettings({ adminAllowedHosts: 'admin' }, {})).toThrow(/adminAllowedHosts/);
  });
});

describe('bodies being received and the brute-force guard', () => {
  it('has budgets for unauthenticated bodies apart from the tenants, a minimum upload rate, and a per-address guard budget', () => {
    const s = resolveSettings({}, {});
    expect(s.limits).toMatchObject({
      maxInFlightBodyBytes: 64 * 1024 * 1024,
      maxInFlightBodyBytesPerNamespace: 16 * 1024 * 1024,
      maxUnauthenticatedBodyBytes: 8 * 1024 * 1024,
      maxUnauthenticatedBodyBytesPerAddress: 2 * 1024 * 1024,
      maxUnauthenticatedBodyBytesPerIntegration: 4 * 1024 * 1024,
      minBodyBytesPerSecond: 8192,
      bodyRateGraceMs: 2000,
    });
    expect(s.authThrottle).toMatchObject({ failures: 20, failuresPerAddress: 100 });
  });

  it('takes failuresPerAddress as five times failures unless given, never below failures', () => {
    expect(resolveSettings({ authThrottle: { failures: 3 } }, {}).authThrottle.failuresPerAddress).toBe(15);
    expect(
      resolveSettings({ authThrottle: { failures: 3, failuresPerAddress: 7 } }, {}).authThrottle.failuresPerAddress,
    ).toBe(7);
    expect(() => resolveSettings({ authThrottle: { failures: 30, failuresPerAddress: 7 } }, {})).toThrow(
      /failuresPerAddress must be at least/,
    );
  });

  it('refuses a body budget or rate that is not a positive integer', () => {
    expect(() => resolveSettings({ limits: { maxUnauthenticatedBodyBytesPerAddress: 0 } }, {})).toThrow(
      /maxUnauthenticatedBodyBytesPerAddress/,
    );
    expect(() => resolveSettings({ limits: { minBodyBytesPerSecond: 1.5 } }, {})).toThrow(/minBodyBytesPerSecond/);
  });
});
