import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Gauge, Registry } from 'prom-client';
import {
  DestinationPause,
  type PauseOptions,
  type RuntimePause,
} from '../../../../../ingester/destinations/protection/pause.js';
import { FilePauseStore } from '../../../../../ingester/destinations/protection/pause-store.js';
import { DestinationPauses } from '../../../../../ingester/destinations/protection/destination-pauses.js';
import { ReceiverGuard, PAUSED_HOLD_MS } from '../../../../../ingester/destinations/protection/receiver-guard.js';
import { DestinationMetrics } from '../../../../../ingester/destinations/metrics.js';
import { resolveDestinations } from '../../../../../ingester/destinations/settings.js';

const HOUR = 3600_000;

function pause(over: Partial<PauseOptions> = {}): {
  p: DestinationPause;
  clock: { now: number };
  gauge: (reason: string) => Promise<number | undefined>;
  kept: Array<RuntimePause | undefined>;
  changes: string[];
} {
  const clock = { now: 1_000_000 };
  const registry = new Registry();
  const g = new Gauge({ name: 'paused', help: 'h', labelNames: ['destination', 'reason'], registers: [registry] });
  const kept: Array<RuntimePause | undefined> = [];
  const changes: string[] = [];
  const p = new DestinationPause('tickets', {
    suspend: false,
    autoPauseAfterMs: 24 * HOUR,
    gauge: g,
    persist: (x) => kept.push(x),
    onChange: (s) => changes.push(s.paused ? `paused:${s.by}` : 'resumed'),
    now: () => clock.now,
    ...over,
  });
  const gauge = async (reason: string): Promise<number | undefined> =>
    (await g.get()).values.find((v) => v.labels.reason === reason)?.value;
  return { p, clock, gauge, kept, changes };
}

describe('a destination pause', () => {
  it('is not paused by default, and its gauge says 0 for both reasons', async () => {
    const { p, gauge } = pause();
    expect(p.paused).toBe(false);
    expect(p.status()).toEqual({ paused: false });
    expect(await gauge('suspended')).toBe(0);
    expect(await gauge('auto')).toBe(0);
  });

  it('pauses and resumes through the admin API, keeping the runtime state', async () => {
    const { p, clock, gauge, kept, changes } = pause();
    p.pause();
    expect(p.paused).toBe(true);
    expect(p.status()).toEqual({
      paused: true,
      reason: 'suspended',
      by: 'admin',
      since: new Date(clock.now).toISOString(),
    });
    expect(await gauge('suspended')).toBe(1);
    expect(kept).toEqual([{ by: 'admin', since: clock.now }]);
    expect(p.resume()).toBe('resumed');
    expect(p.paused).toBe(false);
    expect(await gauge('suspended')).toBe(0);
    expect(kept.at(-1)).toBeUndefined();
    expect(p.resume()).toBe('not_paused');
    expect(changes).toEqual(['paused:admin', 'resumed']);
  });

  it("lets the settings' suspend win: a resume through the API does not end it, only the settings do", async () => {
    const { p, gauge, kept } = pause({ suspend: true });
    expect(p.paused).toBe(true);
    expect(p.status()).toMatchObject({ paused: true, reason: 'suspended', by: 'settings' });
    expect(await gauge('suspended')).toBe(1);
    expect(p.resume()).toBe('suspended_by_settings');
    expect(p.paused).toBe(true);
    p.setSuspended(false);
    expect(p.paused).toBe(false);
    expect(await gauge('suspended')).toBe(0);
    // The settings are not runtime state: nothing was kept.
    expect(kept).toEqual([]);
  });

  it('an admin pause outlives the settings turning suspend off', () => {
    const { p } = pause({ suspend: true });
    p.pause();
    p.setSuspended(false);
    expect(p.status()).toMatchObject({ paused: true, by: 'admin' });
    expect(p.resume()).toBe('resumed');
    expect(p.paused).toBe(false);
  });

  it('auto-pauses after failing continuously for the window, not before, and a success restarts the window', async () => {
    const { p, clock, gauge, kept, changes } = pause();
    p.failed('http_500', 'HTTP 500: boom');
    clock.now += 23 * HOUR;
    p.failed('http_500', 'HTTP 500: boom');
    expect(p.paused).toBe(false);
    expect(p.status()).toMatchObject({
      paused: false,
      failingSince: new Date(1_000_000).toISOString(),
      autoPauseAt: new Date(1_000_000 + 24 * HOUR).toISOString(),
    });
    p.succeeded();
    clock.now += 2 * HOUR;
    p.failed('timeout', 'no answer within 5s');
    expect(p.paused).toBe(false);
    clock.now += 24 * HOUR;
    p.failed('http_503', 'HTTP 503: maintenance');
    expect(p.paused).toBe(true);
    expect(p.status()).toEqual({
      paused: true,
      reason: 'auto',
      by: 'auto',
      since: new Date(clock.now).toISOString(),
      lastFailure: { at: new Date(clock.now).toISOString(), reason: 'http_503', error: 'HTTP 503: maintenance' },
    });
    expect(await gauge('auto')).toBe(1);
    expect(await gauge('suspended')).toBe(0);
    expect(kept.at(-1)).toMatchObject({ by: 'auto', failingSince: clock.now - 24 * HOUR });
    expect(changes).toEqual(['paused:auto']);
  });

  it('stays auto-paused until an explicit resume, which starts a new window', async () => {
    const { p, clock, gauge } = pause({ autoPauseAfterMs: 1000 });
    p.failed('network', 'ECONNREFUSED');
    clock.now += 1000;
    p.failed('network', 'ECONNREFUSED');
    expect(p.paused).toBe(true);
    // An admin pause on top changes nothing; the settings' suspend turning off does not resume it.
    p.pause();
    p.setSuspended(false);
    expect(p.status().reason).toBe('auto');
    expect(p.resume()).toBe('resumed');
    expect(await gauge('auto')).toBe(0);
    // The failures before the resume do not count: one more failure does not pause it again.
    clock.now += 1;
    p.failed('network', 'ECONNREFUSED');
    expect(p.paused).toBe(false);
  });

  it('an auto-pause ends when the settings turn suspend on and off again (a team has no admin API)', async () => {
    const { p, clock, gauge, kept, changes } = pause({ autoPauseAfterMs: 1000 });
    p.failed('network', 'ECONNREFUSED');
    clock.now += 1000;
    p.failed('network', 'ECONNREFUSED');
    expect(p.condition()).toMatchObject({ status: 'True', reason: 'AutoPaused' });
    p.setSuspended(true);
    // While suspended the settings are what must change: that is what the state names.
    expect(p.status()).toMatchObject({ paused: true, reason: 'suspended', by: 'settings' });
    expect(p.condition()).toMatchObject({ status: 'True', reason: 'Suspended' });
    p.setSuspended(false);
    expect(p.paused).toBe(false);
    expect(p.condition()).toEqual({ status: 'False', reason: 'Active', message: 'delivering' });
    expect(await gauge('auto')).toBe(0);
    expect(kept.at(-1)).toBeUndefined();
    expect(changes).toEqual(['paused:auto', 'paused:settings', 'resumed']);
    // A new window: one more failure does not pause it again.
    clock.now += 1;
    p.failed('network', 'ECONNREFUSED');
    expect(p.paused).toBe(false);
  });

  it('takes a new autoPause.after for the failures from then on, without ending an auto-pause in place', () => {
    const { p, clock } = pause({ autoPauseAfterMs: 10_000 });
    p.failed('http_500', 'x');
    clock.now += 3000;
    p.failed('http_500', 'x');
    expect(p.paused).toBe(false);
    p.setAutoPauseAfter(2000);
    expect(p.status().autoPauseAt).toBe(new Date(1_000_000 + 2000).toISOString());
    p.failed('http_500', 'x');
    expect(p.paused).toBe(true);
    p.setAutoPauseAfter(0);
    expect(p.condition().reason).toBe('AutoPaused');
    expect(p.resume()).toBe('resumed');
    clock.now += 100 * HOUR;
    p.failed('http_500', 'x');
    clock.now += 100 * HOUR;
    p.failed('http_500', 'x');
    expect(p.paused).toBe(false);
  });

  it('names its Paused condition: Suspended, PausedByAdmin, AutoPaused with since when and the last failure', () => {
    expect(pause({ suspend: true }).p.condition()).toMatchObject({ status: 'True', reason: 'Suspended' });
    const admin = pause();
    admin.p.pause();
    expect(admin.p.condition()).toMatchObject({ status: 'True', reason: 'PausedByAdmin' });
    const auto = pause({ autoPauseAfterMs: 1 });
    auto.p.failed('http_503', 'HTTP 503: maintenance');
    auto.clock.now += 1;
    auto.p.failed('http_503', 'HTTP 503: maintenance');
    const since = new Date(auto.clock.now).toISOString();
    expect(auto.p.condition()).toEqual({
      status: 'True',
      reason: 'AutoPaused',
      message: expect.stringContaining(`auto-paused since ${since}`) as string,
    });
    expect(auto.p.condition().message).toContain('http_503: HTTP 503: maintenance');
    auto.p.resume();
    auto.p.failed('http_500', 'boom\x1b[2J\nforged line');
    auto.clock.now += 1;
    auto.p.failed('http_500', 'boom\x1b[2J\nforged line');
    expect(auto.p.condition().message).toContain('boom\\x1b[2J\\x0aforged line');
  });

  it('never auto-pauses with autoPause disabled', () => {
    const { p, clock } = pause({ autoPauseAfterMs: 0 });
    p.failed('http_500', 'x');
    clock.now += 1000 * HOUR;
    p.failed('http_500', 'x');
    expect(p.paused).toBe(false);
  });

  it("keeps a bounded excerpt of the receiver's answer", () => {
    const { p } = pause();
    p.failed('http_500', 'x'.repeat(10_000));
    expect(p.status().lastFailure?.error).toHaveLength(256);
  });

  it('takes another replica’s state without keeping it again, and wakes who waits for the resume', async () => {
    const { p, kept } = pause();
    const told: boolean[] = [];
    p.listen((paused) => told.push(paused));
    p.apply({ by: 'admin', since: 5 });
    expect(p.paused).toBe(true);
    let resumed = false;
    const waiting = p.untilResumed().then(() => (resumed = true));
    await Promise.resolve();
    expect(resumed).toBe(false);
    p.apply(undefined);
    await waiting;
    expect(resumed).toBe(true);
    expect(told).toEqual([true, false]);
    expect(kept).toEqual([]);
  });
});

describe('the receiver guard of a paused destination', () => {
  const metrics = new DestinationMetrics(new Registry());
  const logger = pino({ level: 'silent' });

  it('holds every request while paused, sends again once resumed, and reports failures to the pause', () => {
    const clock = { now: 0 };
    const p = new DestinationPause('g', {
      suspend: false,
      autoPauseAfterMs: 1000,
      gauge: metrics.paused,
      now: () => clock.now,
    });
    const guard = new ReceiverGuard('g', {}, metrics, logger, () => clock.now, p);
    expect(guard.admit(1)).toEqual({ kind: 'send', probe: false });
    guard.answered({ kind: 'retry', reason: 'http_500', error: 'HTTP 500' }, false);
    clock.now = 1000;
    guard.answered({ kind: 'retry', reason: 'http_500', error: 'HTTP 500' }, false);
    expect(p.paused).toBe(true);
    expect(guard.admit(1)).toEqual({ kind: 'hold', ms: PAUSED_HOLD_MS, paused: true });
    expect(guard.holdMs()).toBe(PAUSED_HOLD_MS);
    p.resume();
    expect(guard.admit(1)).toEqual({ kind: 'send', probe: false });
    expect(guard.holdMs()).toBe(0);
  });

  it('a refusal (4xx) or intake’s own trouble does not count toward auto-pause', () => {
    const clock = { now: 0 };
    const p = new DestinationPause('h', {
      suspend: false,
      autoPauseAfterMs: 1000,
      gauge: metrics.paused,
      now: () => clock.now,
    });
    const guard = new ReceiverGuard('h', {}, metrics, logger, () => clock.now, p);
    guard.answered({ kind: 'retry', reason: 'http_500', error: 'x' }, false);
    clock.now = 500;
    guard.answered({ kind: 'reject', reason: 'http_400', error: 'bad' }, false);
    clock.now = 2000;
    guard.answered({ kind: 'retry', reason: 'internal', error: 'x' }, false);
    guard.answered({ kind: 'retry', reason: 'http_500', error: 'x' }, false);
    expect(p.paused).toBe(false);
  });
});

describe('kept pauses', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const dir = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'intake-pauses-'));
    dirs.push(d);
    return d;
  };

  it('survive a restart in the storage directory (file store), and a resume forgets them', async () => {
    const d = dir();
    const settings = resolveDestinations([
      { name: 'tickets', http: { url: 'http://127.0.0.1:1' } },
      { name: 'other', http: { url: 'http://127.0.0.1:1' } },
    ]);
    const run = (): DestinationPauses => {
      const pauses = new DestinationPauses(new DestinationMetrics(new Registry()).paused, pino({ level: 'silent' }));
      for (const s of settings) pauses.add(s);
      const store = new FilePauseStore(d);
      pauses.keepIn(store, store.load());
      return pauses;
    };
    const first = run();
    expect(await first.pause('tickets')).toMatchObject({ paused: true, by: 'admin' });
    expect(await first.pause('nope')).toBeUndefined();
    const second = run();
    expect(second.status('tickets')).toMatchObject({ paused: true, by: 'admin' });
    expect(second.status('other')).toEqual({ paused: false });
    expect(await second.resume('tickets')).toMatchObject({ result: 'resumed', status: { paused: false } });
    expect(run().status('tickets')).toEqual({ paused: false });
    expect(JSON.parse(readFileSync(join(d, 'destination-pauses.json'), 'utf8'))).toEqual({});
  });

  it('a team destination arriving after the store was read takes its kept pause; removed, its kept pause is forgotten', async () => {
    const d = dir();
    const [team] = resolveDestinations([{ name: 'tickets', http: { url: 'http://127.0.0.1:1' } }]).map((s) => ({
      ...s,
      name: 'team-a/tickets',
      namespace: 'team-a',
    }));
    const run = (): DestinationPauses => {
      const pauses = new DestinationPauses(new DestinationMetrics(new Registry()).paused, pino({ level: 'silent' }));
      const store = new FilePauseStore(d);
      pauses.keepIn(store, store.load());
      return pauses;
    };
    const first = run();
    first.add(team!);
    expect(await first.pause('team-a/tickets')).toMatchObject({ paused: true, by: 'admin' });
    const second = run();
    expect(second.status('team-a/tickets')).toBeUndefined();
    second.add(team!);
    expect(second.status('team-a/tickets')).toMatchObject({ paused: true, by: 'admin' });
    second.remove('team-a/tickets');
    await new Promise((r) => setTimeout(r, 10));
    expect(JSON.parse(readFileSync(join(d, 'destination-pauses.json'), 'utf8'))).toEqual({});
    second.add(team!);
    expect(second.status('team-a/tickets')).toEqual({ paused: false });
  });

  it("apply at once to a team's destination added after the start, or after another replica's change", async () => {
    const d = dir();
    const [team, later] = resolveDestinations([
      { name: 'pager', http: { url: 'http://127.0.0.1:1' } },
      { name: 'later', http: { url: 'http://127.0.0.1:1' } },
    ]).map((s) => ({ ...s, name: `team-a/${s.name}`, namespace: 'team-a' }));
    const first = new DestinationPauses(new DestinationMetrics(new Registry()).paused, pino({ level: 'silent' }));
    first.keepIn(new FilePauseStore(d));
    first.add(team!);
    expect(await first.pause('team-a/pager')).toMatchObject({ paused: true, by: 'admin' });
    // A restart: the store is read before the team's destinations arrive.
    const second = new DestinationPauses(new DestinationMetrics(new Registry()).paused, pino({ level: 'silent' }));
    const store = new FilePauseStore(d);
    second.keepIn(store, store.load());
    const pager = second.add(team!);
    expect(pager.paused).toBe(true);
    expect(second.status('team-a/pager')).toMatchObject({ paused: true, by: 'admin' });
    // Another replica paused a destination this one does not deliver to yet (the bus's watch).
    second.apply('team-a/later', { by: 'admin', since: 1 });
    expect(second.add(later!).paused).toBe(true);
    second.apply('team-a/later', undefined);
    expect(second.status('team-a/later')).toEqual({ paused: false });
  });

  it('a file that cannot be read stops the start with its name instead of resuming everything', () => {
    const d = dir();
    writeFileSync(join(d, 'destination-pauses.json'), '{not json');
    expect(() => new FilePauseStore(d)).toThrow(/destination-pauses\.json cannot be read/);
  });

  it('entries of another shape are ignored', () => {
    const d = dir();
    writeFileSync(join(d, 'destination-pauses.json'), JSON.stringify({ a: { by: 'someone', since: 1 }, b: 7 }));
    expect(new FilePauseStore(d).load().size).toBe(0);
  });
});
