import { KnownSenders, MAX_ADDRESSES_PER_INTEGRATION, MAX_PAIRS } from '../../../../ingester/auth/known-senders.js';

const addresses = (n: number, prefix = '10.0') => Array.from({ length: n }, (_, i) => `${prefix}.${i >> 8}.${i & 255}`);

describe('KnownSenders', () => {
  it('remembers an address per integration, not across them', () => {
    const known = new KnownSenders();
    known.remember('192.0.2.1', 'gh-a');
    expect(known.knows('192.0.2.1', 'gh-a')).toBe(true);
    expect(known.knows('192.0.2.1', 'gh-b')).toBe(false);
    expect(known.knows('192.0.2.2', 'gh-a')).toBe(false);
  });

  it("with the defaults, 100,000 proofs for one integration from rotating addresses leave another's sender known", () => {
    const known = new KnownSenders();
    known.remember('192.0.2.1', 'victim');
    for (let i = 0; i < 100_000; i++) known.remember(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, 'rotating');
    expect(known.knows('192.0.2.1', 'victim')).toBe(true);
  });

  it("one integration proving from many addresses forgets its own oldest, never another integration's senders", () => {
    const known = new KnownSenders({ perIntegration: 100, total: 10_000 });
    known.remember('192.0.2.1', 'victim');
    for (const address of addresses(5000)) known.remember(address, 'rotating');
    expect(known.knows('192.0.2.1', 'victim')).toBe(true);
    // The rotating integration keeps its most recent 100.
    expect(known.size).toBe(101);
    expect(known.knows('10.0.19.135', 'rotating')).toBe(true); // the last of 5000
    expect(known.knows('10.0.0.0', 'rotating')).toBe(false);
  });

  it('past the total, the integration holding the most gives one up, not the others', () => {
    const known = new KnownSenders({ perIntegration: 50, total: 60 });
    for (const address of addresses(10, '10.1')) known.remember(address, 'small');
    for (const address of addresses(50, '10.2')) known.remember(address, 'large');
    expect(known.size).toBe(60);
    // A new integration's sender: the large one gives up its least recently proven address.
    known.remember('192.0.2.9', 'new');
    expect(known.size).toBe(60);
    expect(known.knows('192.0.2.9', 'new')).toBe(true);
    for (const address of addresses(10, '10.1')) expect(known.knows(address, 'small')).toBe(true);
    expect(known.knows('10.2.0.0', 'large')).toBe(false);
    expect(known.knows('10.2.0.1', 'large')).toBe(true);
  });

  it('forgets a proof after its time', () => {
    // (Not 0: lru-cache takes a start of 0 for "no time to live".)
    let now = 1;
    const known = new KnownSenders({ perIntegration: 10, total: 100, rememberedMs: 1000, now: () => now });
    known.remember('192.0.2.1', 'gh');
    now = 501;
    expect(known.knows('192.0.2.1', 'gh')).toBe(true);
    now = 1601;
    expect(known.knows('192.0.2.1', 'gh')).toBe(false);
  });

  it('has sane defaults: a thousand addresses an integration, a hundred thousand pairs', () => {
    expect(MAX_ADDRESSES_PER_INTEGRATION).toBe(1000);
    expect(MAX_PAIRS).toBe(100_000);
  });
});
