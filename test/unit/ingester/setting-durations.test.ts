import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ConfigError } from '../../../common/config-files.js';
import { formatDuration, parseDuration } from '../../../common/duration.js';
import { checkSettingsFile, resolveSettings } from '../../../ingester/config.js';

const resolve = (file: unknown) => {
  const deprecated: Array<{ key: string; use: string; message: string }> = [];
  const settings = resolveSettings(file, {}, 'intake.yaml', (d) => deprecated.push(d));
  return { settings, deprecated };
};

describe('durations in the settings file', () => {
  it('reads every duration as a Go-style string, in the unit the settings hold', () => {
    const { settings, deprecated } = resolve({
      limits: { seriesTTL: '15m', headersTimeout: '12s', requestTimeout: '1m', keepAliveTimeout: '4s' },
      authThrottle: { window: '2m', block: '1h', failureDelay: '250ms' },
      sinks: {
        log: { timeout: '3s' },
        jetstream: {
          url: 'nats://x',
          timeout: '1500ms',
          inFlightWait: '0s',
          streamConfig: { maxAge: '24h', duplicateWindow: '20m' },
        },
      },
      spool: { path: '/tmp/s', replayBackoffMin: '100ms', replayBackoffMax: '1m' },
      shutdown: { drainDelay: '2500ms', timeout: '30s' },
      remoteWrite: { url: 'http://127.0.0.1:9/w', flushInterval: '2s', backoffMin: '50ms', backoffMax: '20s' },
      mapping: { timeout: '750ms' },
      deadLetter: { replayLease: '10m', stream: 'DL', subjectPrefix: 'dl', maxAge: '168h' },
    });
    expect(deprecated).toEqual([]);
    expect(settings.limits).toMatchObject({
      seriesTTLSeconds: 900,
      headersTimeoutMs: 12_000,
      requestTimeoutMs: 60_000,
      keepAliveTimeoutMs: 4000,
    });
    expect(settings.authThrottle).toMatchObject({ windowSeconds: 120, blockSeconds: 3600, failureDelayMs: 250 });
    expect(settings.sinks.log.timeoutMs).toBe(3000);
    expect(settings.sinks.jetstream).toMatchObject({
      timeoutMs: 1500,
      inFlightWaitMs: 0,
      deadLetterStream: 'DL',
      deadLetterSubjectPrefix: 'dl',
      deadLetterMaxAgeSeconds: 7 * 24 * 3600,
      streamConfig: { maxAgeSeconds: 86_400, duplicateWindowSeconds: 1200 },
    });
    expect(settings.spool).toMatchObject({ replayBackoffMinMs: 100, replayBackoffMaxMs: 60_000 });
    expect(settings.shutdown).toEqual({ drainDelaySeconds: 2.5, timeoutSeconds: 30 });
    expect(settings.remoteWrite).toMatchObject({ flushIntervalMs: 2000, minBackoffMs: 50, maxBackoffMs: 20_000 });
    expect(settings.mapping.timeoutMs).toBe(750);
    expect(settings.deadLetter).toEqual({
      path: '/tmp/intake-deadletter.sqlite',
      maxBytes: 256 * 1024 * 1024,
      maxBytesPerNamespace: 16 * 1024 * 1024,
      replayLeaseSeconds: 600,
      bulkReplay: { maxRunning: 4, allNamespaces: 'shared', maxRate: 1000 },
    });
  });

  it('still reads the old keys, one deprecation each naming the old key and the new one with its value', () => {
    const { settings, deprecated } = resolve({
      limits: { headersTimeoutMs: 12_000, seriesTTLSeconds: 90 },
      remoteWrite: { url: 'http://127.0.0.1:9/w', minBackoffMs: 50 },
      spool: { path: '/tmp/s', replayBackoffMaxMs: 1500 },
      deadLetter: { replayLeaseSeconds: 60 },
    });
    expect(settings.limits.headersTimeoutMs).toBe(12_000);
    expect(settings.limits.seriesTTLSeconds).toBe(90);
    expect(settings.remoteWrite?.minBackoffMs).toBe(50);
    expect(settings.spool?.replayBackoffMaxMs).toBe(1500);
    expect(settings.deadLetter.replayLeaseSeconds).toBe(60);
    expect(deprecated.map((d) => d.message).sort()).toEqual([
      'deadLetter.replayLeaseSeconds is deprecated: use deadLetter.replayLease: 1m',
      'limits.headersTimeoutMs is deprecated: use limits.headersTimeout: 12s',
      'limits.seriesTTLSeconds is deprecated: use limits.seriesTTL: 1m30s',
      'remoteWrite.minBackoffMs is deprecated: use remoteWrite.backoffMin: 50ms',
      'spool.replayBackoffMaxMs is deprecated: use spool.replayBackoffMax: 1s500ms',
    ]);
    expect(deprecated.find((d) => d.key === 'remoteWrite.minBackoffMs')?.use).toBe('remoteWrite.backoffMin');
  });

  it('reads the dead-letter keys that moved from sinks.jetstream into deadLetter, with a warning each', () => {
    const { settings, deprecated } = resolve({
      sinks: {
        jetstream: {
          url: 'nats://x',
          deadLetterStream: 'OLD_DL',
          deadLetterSubjectPrefix: 'old.dl',
          deadLetterMaxAgeSeconds: 3600,
        },
      },
    });
    expect(settings.sinks.jetstream).toMatchObject({
      deadLetterStream: 'OLD_DL',
      deadLetterSubjectPrefix: 'old.dl',
      deadLetterMaxAgeSeconds: 3600,
    });
    expect(deprecated.map((d) => d.message)).toEqual([
      'sinks.jetstream.deadLetterStream is deprecated: use deadLetter.stream',
      'sinks.jetstream.deadLetterSubjectPrefix is deprecated: use deadLetter.subjectPrefix',
      'sinks.jetstream.deadLetterMaxAgeSeconds is deprecated: use deadLetter.maxAge: 1h',
    ]);
    // Not the deadLetter block's own store settings: those stay the store's.
    expect(settings.deadLetter).not.toHaveProperty('stream');
  });

  it('takes both spellings when they agree, and refuses them when they differ, naming both', () => {
    expect(
      resolve({ limits: { headersTimeoutMs: 12_000, headersTimeout: '12s' } }).settings.limits.headersTimeoutMs,
    ).toBe(12_000);
    expect(() => resolve({ limits: { headersTimeoutMs: 12_000, headersTimeout: '10s' } })).toThrow(
      'intake.yaml: limits.headersTimeoutMs and limits.headersTimeout are both given, with different values (12000 and "10s"): keep limits.headersTimeout alone',
    );
    expect(() =>
      resolve({ sinks: { jetstream: { url: 'nats://x', deadLetterStream: 'A' } }, deadLetter: { stream: 'B' } }),
    ).toThrow(/sinks\.jetstream\.deadLetterStream and deadLetter\.stream are both given, with different values/);
    expect(() =>
      resolve({
        sinks: { jetstream: { url: 'nats://x', deadLetterMaxAgeSeconds: 60 } },
        deadLetter: { maxAge: '2m' },
      }),
    ).toThrow(/sinks\.jetstream\.deadLetterMaxAgeSeconds and deadLetter\.maxAge are both given/);
  });

  it.each([
    [{ limits: { requestTimeout: 30000 } }, /limits\.requestTimeout: 30000 is not a duration: give one with its unit/],
    [{ limits: { requestTimeout: '30 s' } }, /limits\.requestTimeout: invalid duration "30 s"/],
    [{ limits: { requestTimeout: '' } }, /limits\.requestTimeout: empty/],
    [{ limits: { requestTimeout: '0s' } }, /limits\.requestTimeout: "0s" is too short: at least 1ms/],
    [{ mapping: { timeout: '1.5ms' } }, /mapping\.timeout: "1.5ms": give whole milliseconds/],
    [{ authThrottle: { window: '1500ms' } }, /authThrottle\.window: "1500ms": give whole seconds/],
    [{ deadLetter: { replayLease: '25h' } }, /deadLetter\.replayLease: "25h" is too long: at most 24h/],
    [
      { remoteWrite: { url: 'http://x/w', maxSampleAge: '30s' } },
      /remoteWrite\.maxSampleAge: "30s" is too short: at least 1m/,
    ],
  ])('refuses %j with an error naming the field', (file, message) => {
    expect(() => resolve(file)).toThrow(ConfigError);
    expect(() => resolve(file)).toThrow(message);
  });

  it('checks the min/max order under the new names', () => {
    expect(() => resolve({ spool: { path: '/s', replayBackoffMin: '2s', replayBackoffMax: '1s' } })).toThrow(
      'spool: replayBackoffMax must be at least replayBackoffMin',
    );
    expect(() => resolve({ remoteWrite: { url: 'http://x/w', backoffMin: '2s', backoffMax: '1s' } })).toThrow(
      'remoteWrite.backoffMin must not exceed remoteWrite.backoffMax',
    );
  });

  it('leaves the document it was given as read, and a reload check takes the same spellings', () => {
    const file = { limits: { headersTimeout: '3s' } };
    expect(checkSettingsFile(file, 'f').deprecated).toEqual([]);
    expect(file).toEqual({ limits: { headersTimeout: '3s' } });
    expect(() => checkSettingsFile({ limits: { headersTimeout: 'soon' } }, 'f')).toThrow(/f: limits\.headersTimeout/);
  });

  it('formats each default back to a duration that parses to it', () => {
    for (const ms of [0, 1, 250, 1000, 1500, 90_000, 3_600_000, 5_430_250])
      expect(parseDuration(formatDuration(ms))).toBe(ms);
    expect(formatDuration(90_000)).toBe('1m30s');
    expect(formatDuration(300_000)).toBe('5m');
    expect(formatDuration(14 * 24 * 3_600_000)).toBe('336h');
  });
});

describe("a standalone route's signature tolerance", () => {
  const signed = (signature: Record<string, unknown>) => ({
    routes: [
      {
        apiVersion: 'intake.dev/v1alpha1',
        kind: 'WebhookIntegration',
        name: 'deploys',
        namespace: 'default',
        credentials: [],
        authentication: {
          mode: 'signature',
          signature: {
            scheme: 'standard-webhooks',
            secrets: [{ value: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
            ...signature,
          },
        },
      },
    ],
  });
  const load = async (file: unknown) => {
    const { loadRoutesFromFile } = await import('../../../ingester/routing/file-source.js');
    const dir = mkdtempSync(join(tmpdir(), 'intake-tolerance-'));
    writeFileSync(join(dir, 'intake.yaml'), stringify(file));
    try {
      return loadRoutesFromFile(join(dir, 'intake.yaml'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const tolerance = async (signature: Record<string, unknown>) =>
    (await load(signed(signature)))[0]?.route.authentication?.signature?.toleranceSeconds;

  it('is a duration as in the CRD, and the earlier toleranceSeconds is read with a warning at start-up', async () => {
    expect(await tolerance({ tolerance: '10m' })).toBe(600);
    expect(await tolerance({ toleranceSeconds: 90 })).toBe(90);
    expect(await tolerance({ tolerance: '90s', toleranceSeconds: 90 })).toBe(90);
    expect(resolve(signed({ toleranceSeconds: 90 })).deprecated.map((d) => d.message)).toEqual([
      'routes[0].authentication.signature.toleranceSeconds is deprecated: use routes[0].authentication.signature.tolerance: 1m30s',
    ]);
    expect(resolve(signed({ tolerance: '90s' })).deprecated).toEqual([]);
  });

  it.each([
    [
      { tolerance: '10m', toleranceSeconds: 60 },
      /signature\.tolerance and toleranceSeconds are both given, with different values/,
    ],
    [{ tolerance: 300 }, /routes\[0\]\.authentication\.signature\.tolerance: 300 is not a duration/],
    [{ tolerance: 'soon' }, /signature\.tolerance: invalid duration "soon"/],
    [{ tolerance: '25h' }, /signature\.tolerance: "25h" must be whole seconds between 1s and 24h/],
  ])('refuses %j naming the field', async (signature, message) => {
    await expect(load(signed(signature))).rejects.toThrow(message);
  });
});
