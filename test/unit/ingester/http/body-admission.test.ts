import { BodyAdmission, DEFAULT_BODY_ADMISSION } from '../../../../ingester/http/body-admission.js';
import { KeyedBodyBudget } from '../../../../ingester/http/body-budget.js';
import { BodyBytesLimitError } from '../../../../ingester/core/errors.js';

const KiB = 1024;
const admission = () =>
  new BodyAdmission({
    bodyBytes: 100 * KiB,
    maxInFlightBodyBytes: 1000 * KiB,
    maxInFlightBodyBytesPerNamespace: 300 * KiB,
    maxUnauthenticatedBodyBytes: 500 * KiB,
    maxUnauthenticatedBodyBytesPerAddress: 200 * KiB,
    maxUnauthenticatedBodyBytesPerIntegration: 300 * KiB,
  });

const released = (r: unknown): (() => void) => {
  expect(typeof r).toBe('function');
  return r as () => void;
};
const refused = (r: unknown): BodyBytesLimitError => {
  expect(r).toBeInstanceOf(BodyBytesLimitError);
  return r as BodyBytesLimitError;
};

describe('KeyedBodyBudget', () => {
  it('bounds each key on its own, forgets empty keys, releases once', () => {
    const b = new KeyedBodyBudget(100);
    const a = released(b.reserve('a', 60));
    expect(b.reserve('a', 60)).toBeUndefined();
    released(b.reserve('b', 100));
    a();
    a();
    expect(b.heldBytes('a')).toBe(0);
    // An empty key takes one body, whatever its size.
    released(b.reserve('a', 500));
  });
});

describe('BodyAdmission', () => {
  it('reserves what a body announces, at most the body limit', () => {
    const a = admission();
    expect(a.bytesFor('10')).toBe(10);
    expect(a.bytesFor(String(10 * 1024 * KiB))).toBe(100 * KiB);
    expect(a.bytesFor(undefined, 'chunked')).toBe(100 * KiB);
    expect(a.bytesFor('nonsense')).toBe(100 * KiB);
    // Neither header: no body at all (a GET, an empty POST).
    expect(a.bytesFor(undefined)).toBe(0);
  });

  it('bounds unauthenticated bodies per address with 429 naming the setting, never touching tenants', () => {
    const a = admission();
    released(a.reserveUnauthenticated('198.51.100.1', 'gh', 100 * KiB));
    released(a.reserveUnauthenticated('198.51.100.1', 'gh', 100 * KiB));
    const e = refused(a.reserveUnauthenticated('198.51.100.1', 'gh', 100 * KiB));
    expect(e.statusCode).toBe(429);
    expect(e.headers).toEqual({ 'retry-after': '1' });
    expect(e.toBody()).toMatchObject({
      code: 'BODY_BYTES_LIMITED',
      limit: { scope: 'address', setting: 'limits.maxUnauthenticatedBodyBytesPerAddress', maxBytes: 200 * KiB },
    });
    // Another address may still send to another integration; every tenant's whole share is untouched.
    released(a.reserveUnauthenticated('198.51.100.2', 'other', 100 * KiB));
    for (let i = 0; i < 3; i++) released(a.reserveAuthenticated('team-b', 100 * KiB, 429));
  });

  it('bounds unauthenticated bodies per integration (503) and in all (503), giving back what it took', () => {
    const a = admission();
    for (let i = 0; i < 3; i++) released(a.reserveUnauthenticated(`198.51.100.${i}`, 'gh', 100 * KiB));
    const byIntegration = refused(a.reserveUnauthenticated('198.51.100.9', 'gh', 100 * KiB));
    expect(byIntegration.statusCode).toBe(503);
    expect(byIntegration.limit.scope).toBe('integration');
    // The refused body's address reservation was given back: that address can still send elsewhere.
    released(a.reserveUnauthenticated('198.51.100.9', 'slack', 100 * KiB));
    released(a.reserveUnauthenticated('198.51.100.10', 'pd', 100 * KiB));
    const total = refused(a.reserveUnauthenticated('198.51.100.11', 'other', 100 * KiB));
    expect(total.statusCode).toBe(503);
    expect(total.limit.scope).toBe('unauthenticated');
  });

  it('gives addresses known to send for an integration a lane of their own, which strangers cannot fill', () => {
    const a = admission();
    for (let i = 0; i < 3; i++) released(a.reserveUnauthenticated(`198.51.100.${i}`, 'gh', 100 * KiB));
    expect(refused(a.reserveUnauthenticated('198.51.100.9', 'gh', 100 * KiB)).limit.scope).toBe('integration');
    // GitHub's egress, known for gh: served, and not bound by its address's share either.
    for (let i = 0; i < 3; i++) released(a.reserveUnauthenticated('140.82.115.1', 'gh', 100 * KiB, true));
    // Its lane has the same per-integration size.
    expect(refused(a.reserveUnauthenticated('140.82.115.2', 'gh', 100 * KiB, true)).limit.scope).toBe('integration');
  });

  it("bounds one namespace's authenticated bodies to its share, with the route's status, others unharmed", () => {
    const a = admission();
    const held = [0, 1, 2].map(() => released(a.reserveAuthenticated('team-a', 100 * KiB, 503)));
    const e = refused(a.reserveAuthenticated('team-a', 100 * KiB, 503));
    expect(e.statusCode).toBe(503);
    expect(e.message).toMatch(/namespace team-a reached limits\.maxInFlightBodyBytesPerNamespace/);
    expect(e.limit.scope).toBe('namespace');
    for (let i = 0; i < 3; i++) released(a.reserveAuthenticated('team-b', 100 * KiB, 429));
    held[0]!();
    released(a.reserveAuthenticated('team-a', 100 * KiB, 503));
  });

  it("refuses with 503 once the replica's total is held, and gives the namespace its bytes back", () => {
    const a = admission();
    for (const ns of ['a', 'b', 'c']) for (let i = 0; i < 3; i++) released(a.reserveAuthenticated(ns, 100 * KiB, 429));
    released(a.reserveAuthenticated('d', 100 * KiB, 429));
    const e = refused(a.reserveAuthenticated('e', 100 * KiB, 429));
    expect(e.statusCode).toBe(503);
    expect(e.limit.scope).toBe('replica');
  });

  it('has small defaults for unauthenticated bodies, apart from the tenants', () => {
    expect(DEFAULT_BODY_ADMISSION.maxUnauthenticatedBodyBytesPerAddress).toBeLessThan(
      DEFAULT_BODY_ADMISSION.maxInFlightBodyBytesPerNamespace,
    );
    expect(DEFAULT_BODY_ADMISSION.maxInFlightBodyBytesPerNamespace).toBeLessThan(
      DEFAULT_BODY_ADMISSION.maxInFlightBodyBytes,
    );
  });
});
