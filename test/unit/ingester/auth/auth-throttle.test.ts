import { AuthThrottle, metricsTarget, webhookTarget } from '../../../../ingester/auth/auth-throttle.js';

const A = webhookTarget('team-a-github');
const B = webhookTarget('team-b-github');
const ADDRESS = '192.0.2.10';

describe('AuthThrottle', () => {
  it('blocks the pair (address, integration) over its budget, and nothing else', async () => {
    const t = new AuthThrottle({ failures: 3, windowSeconds: 60, blockSeconds: 300, failuresPerAddress: 100 });
    expect(await t.recordFailure(ADDRESS, A)).toBe(0);
    expect(await t.recordFailure(ADDRESS, A)).toBe(0);
    expect(await t.recordFailure(ADDRESS, A)).toBe(0);
    expect(await t.recordFailure(ADDRESS, A)).toBeGreaterThan(200);
    expect(t.blockedFor(ADDRESS, A)).toBeGreaterThan(200);
    // Another integration from the same address, the same integration from another address, metrics: open.
    expect(t.blockedFor(ADDRESS, B)).toBe(0);
    expect(t.blockedFor('192.0.2.11', A)).toBe(0);
    expect(t.blockedFor(ADDRESS, metricsTarget('team-a'))).toBe(0);
    expect(t.suspectFor(ADDRESS)).toBe(0);
    expect(t.answerBlockedFor(ADDRESS, B)).toBe(0);
  });

  it('gives an unknown integration no pair: its failures count against the address alone', async () => {
    const t = new AuthThrottle({ failures: 2, windowSeconds: 60, blockSeconds: 60, failuresPerAddress: 5 });
    for (let i = 0; i < 4; i++) expect(await t.recordFailure(ADDRESS, undefined)).toBe(0);
    expect(t.blockedFor(ADDRESS, undefined)).toBe(0);
    // The fifth failure across integrations makes the address suspect: failures answer 429...
    expect(await t.recordFailure(ADDRESS, undefined)).toBe(0);
    expect(await t.recordFailure(ADDRESS, undefined)).toBeGreaterThan(0);
    expect(t.suspectFor(ADDRESS)).toBeGreaterThan(0);
    expect(t.answerBlockedFor(ADDRESS, A)).toBeGreaterThan(0);
    // ...but no integration's pair is blocked, so valid credentials still get through.
    expect(t.blockedFor(ADDRESS, A)).toBe(0);
    expect(t.suspectFor('192.0.2.11')).toBe(0);
  });

  it('ends a block after blockSeconds', async () => {
    const t = new AuthThrottle({ failures: 1, windowSeconds: 60, blockSeconds: 2 });
    await t.recordFailure(ADDRESS, A);
    await t.recordFailure(ADDRESS, A);
    expect(t.blockedFor(ADDRESS, A)).toBeGreaterThan(0);
    expect(t.blockedFor(ADDRESS, A, Date.now() + 3000)).toBe(0);
  });

  it('refunds a charge to the pair and to the address', async () => {
    const t = new AuthThrottle({ failures: 2, windowSeconds: 60, blockSeconds: 60, failuresPerAddress: 2 });
    await t.recordFailure(ADDRESS, A);
    await t.refund(ADDRESS, A);
    await t.recordFailure(ADDRESS, A);
    await t.recordFailure(ADDRESS, A);
    expect(t.blockedFor(ADDRESS, A)).toBe(0);
    expect(t.suspectFor(ADDRESS)).toBe(0);
  });

  it('lets a suspect address start a slow check only for an integration it has not tried in the window', async () => {
    const t = new AuthThrottle({ failures: 100, windowSeconds: 60, blockSeconds: 60, failuresPerAddress: 3 });
    // Not suspect: every slow check runs.
    expect(t.maySlowCheck(ADDRESS, A)).toBe(true);
    expect(t.maySlowCheck(ADDRESS, A)).toBe(true);
    for (let i = 0; i < 4; i++) await t.recordFailure(ADDRESS, A);
    expect(t.suspectFor(ADDRESS)).toBeGreaterThan(0);
    // Suspect: A, tried before, only from the cache; B, never tried, as usual (once).
    expect(t.maySlowCheck(ADDRESS, A)).toBe(false);
    expect(t.maySlowCheck(ADDRESS, B)).toBe(true);
    expect(t.maySlowCheck(ADDRESS, B)).toBe(false);
    // A success at B (its refund) clears the mark: its sender keeps getting checked.
    await t.refund(ADDRESS, B);
    expect(t.maySlowCheck(ADDRESS, B)).toBe(true);
  });

  it('refuses settings that are not positive integers', () => {
    expect(() => new AuthThrottle({ failures: 0, windowSeconds: 60, blockSeconds: 60 })).toThrow(/failures/);
    expect(
      () => new AuthThrottle({ failures: 1, windowSeconds: 60, blockSeconds: 60, failuresPerAddress: 1.5 }),
    ).toThrow(/failuresPerAddress/);
  });
});
