/** What one console user may hold of what all share (console/server/bounds.ts). */
import { isRefusal, LoginThrottle, UserSlots, type LoginAttempt } from '../../../console/server/bounds.js';

const slots = (perUser: number, total: number) =>
  new UserSlots({
    perUser,
    total,
    what: 'open pages followed live',
    advice: 'close a tab of the console, or wait',
    perUserCode: 'too_many_streams_for_user',
    perUserSetting: '--max-live-streams-per-user',
    totalCode: 'too_many_streams',
    totalSetting: '--max-live-streams',
    retryAfterSeconds: 10,
  });

describe('UserSlots', () => {
  it('refuses a user past its share with 429, and everyone past the total with 503; a release frees the place once', () => {
    const s = slots(2, 3);
    const a1 = s.acquire('alice');
    const a2 = s.acquire('alice');
    expect(isRefusal(a1) || isRefusal(a2)).toBe(false);
    const a3 = s.acquire('alice');
    expect(a3).toMatchObject({ status: 429, code: 'too_many_streams_for_user', retryAfterSeconds: 10 });
    expect((a3 as { message: string }).message).toContain('--max-live-streams-per-user 2');
    // Alice's refusal took nothing from Bob.
    const b1 = s.acquire('bob');
    expect(isRefusal(b1)).toBe(false);
    expect(s.acquire('carol')).toMatchObject({ status: 503, code: 'too_many_streams' });
    if (isRefusal(a1)) throw new Error('unreachable');
    a1.release();
    a1.release();
    expect(s.heldBy('alice')).toBe(1);
    expect(isRefusal(s.acquire('carol'))).toBe(false);
    expect(s.acquire('dave')).toMatchObject({ status: 503 });
  });
});

describe('LoginThrottle', () => {
  const options = { failureBurst: 3, failureRefillSeconds: 10, signInBurst: 2, signInRefillSeconds: 30 };
  const attempt = (x: ReturnType<LoginThrottle['begin']>): LoginAttempt => {
    if (isRefusal(x)) throw new Error(`refused: ${x.message}`);
    return x;
  };

  it('counts failures per address: refused once the burst is spent, until one refills; another address is not', () => {
    let now = 0;
    const t = new LoginThrottle(options, () => now);
    for (let i = 0; i < 3; i++) attempt(t.begin('10.0.0.1', `guess-${i}`)).failed();
    const refused = t.begin('10.0.0.1', 'guess-3');
    expect(refused).toMatchObject({ status: 429, code: 'login_throttled', retryAfterSeconds: 10 });
    expect(isRefusal(t.begin('10.0.0.2', 'guess-3'))).toBe(false);
    now += 10_000;
    expect(isRefusal(t.begin('10.0.0.1', 'guess-4'))).toBe(false);
  });

  it('reserves the failure before the check: attempts sent at once cannot all pass; a good token gives it back', () => {
    const t = new LoginThrottle(options, () => 0);
    const pending = [0, 1, 2].map((i) => attempt(t.begin('10.0.0.1', `t${i}`)));
    expect(t.begin('10.0.0.1', 't3')).toMatchObject({ status: 429 });
    for (const p of pending) expect(p.succeeded(`user-${Math.random()}`)).toBeUndefined();
    expect(isRefusal(t.begin('10.0.0.1', 't4'))).toBe(false);
  });

  it('throttles sign-ins per token before the check and per identity after it, whatever the address', () => {
    let now = 0;
    const t = new LoginThrottle(options, () => now);
    expect(attempt(t.begin('10.0.0.1', 'tok')).succeeded('alice')).toBeUndefined();
    expect(attempt(t.begin('10.0.0.2', 'tok')).succeeded('alice')).toBeUndefined();
    // The same token a third time: refused before the API server is asked.
    expect(t.begin('10.0.0.3', 'tok')).toMatchObject({ status: 429, code: 'login_throttled', retryAfterSeconds: 30 });
    // Another token of the same identity: asked, then refused for the identity.
    expect(attempt(t.begin('10.0.0.3', 'tok2')).succeeded('alice')).toMatchObject({ status: 429 });
    // Bob is not Alice.
    expect(attempt(t.begin('10.0.0.1', 'bob-token')).succeeded('bob')).toBeUndefined();
    now += 30_000;
    expect(isRefusal(t.begin('10.0.0.3', 'tok'))).toBe(false);
  });
});

describe('LoginThrottle.beginCheck (a bearer token not seen yet)', () => {
  it("shares the address's failures with the sign-ins, and counts no sign-ins", () => {
    const t = new LoginThrottle(
      { failureBurst: 2, failureRefillSeconds: 10, signInBurst: 1, signInRefillSeconds: 30 },
      () => 0,
    );
    const good = t.beginCheck('10.0.0.1');
    if (isRefusal(good)) throw new Error('refused');
    good.succeeded('');
    const again = t.beginCheck('10.0.0.1');
    if (isRefusal(again)) throw new Error('refused');
    again.succeeded('');
    const bad = t.beginCheck('10.0.0.1');
    if (isRefusal(bad)) throw new Error('refused');
    bad.failed();
    const login = t.begin('10.0.0.1', 'guess');
    if (isRefusal(login)) throw new Error('refused');
    login.failed();
    expect(t.beginCheck('10.0.0.1')).toMatchObject({ status: 429, code: 'login_throttled' });
    expect(t.begin('10.0.0.1', 'another')).toMatchObject({ status: 429 });
  });

  it('gives the failure back when the API server could not be asked', () => {
    const t = new LoginThrottle(
      { failureBurst: 1, failureRefillSeconds: 10, signInBurst: 5, signInRefillSeconds: 30 },
      () => 0,
    );
    for (let i = 0; i < 3; i++) {
      const check = t.beginCheck('10.0.0.1');
      if (isRefusal(check)) throw new Error('refused');
      check.abandoned();
    }
    const login = t.begin('10.0.0.1', 'tok');
    if (isRefusal(login)) throw new Error('refused');
    login.abandoned();
    expect(isRefusal(t.begin('10.0.0.1', 'tok2'))).toBe(false);
  });
});
