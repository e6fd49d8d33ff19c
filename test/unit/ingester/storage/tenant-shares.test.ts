import { TenantShares } from '../../../../ingester/storage/tenant-shares.js';

describe('tenant shares', () => {
  it("admits what fits each tenant's share, counting a group as it goes", () => {
    const shares = new TenantShares(100);
    shares.add('a', 60);
    const refused: string[] = [];
    const group = [
      { tenant: 'a', bytes: 30, name: 'a1' },
      { tenant: 'a', bytes: 30, name: 'a2' },
      { tenant: 'b', bytes: 90, name: 'b1' },
      { tenant: 'b', bytes: 20, name: 'b2' },
    ];
    const admitted = shares.admit(group, (item) => refused.push(item.name));
    expect(admitted.map((i) => i.name)).toEqual(['a1', 'b1']);
    expect(refused).toEqual(['a2', 'b2']);
    // Admission only projects; the store adds what it wrote.
    expect(shares.usedBy('a')).toBe(60);
  });

  it('releases, never below zero, and totals what every tenant holds', () => {
    const shares = new TenantShares(100);
    shares.add('a', 10);
    shares.add('b', 20);
    expect(shares.total()).toBe(30);
    shares.release('a', 50);
    expect(shares.usedBy('a')).toBe(0);
    expect(shares.total()).toBe(20);
    shares.clear();
    expect(shares.total()).toBe(0);
  });
});
