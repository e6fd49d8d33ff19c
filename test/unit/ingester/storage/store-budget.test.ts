import { StoreBudget } from '../../../../ingester/storage/store-budget.js';

describe('store budget', () => {
  it('admits a group in order while it fits and refuses the rest whole', () => {
    const b = new StoreBudget(100);
    b.used = 50;
    const refused: number[] = [];
    const admitted = b.admit([{ bytes: 30 }, { bytes: 30 }, { bytes: 20 }], (i) => refused.push(i.bytes));
    expect(admitted.map((i) => i.bytes)).toEqual([30, 20]);
    expect(refused).toEqual([30]);
  });

  it('has no room while the last refused request would not fit', () => {
    const b = new StoreBudget(100);
    b.used = 60;
    expect(b.hasRoom()).toBe(true);
    b.admit([{ bytes: 50 }], () => {});
    expect(b.hasRoom()).toBe(false);
    b.used = 40;
    expect(b.hasRoom()).toBe(true);
  });

  it('does not stay unready for a request that could never fit', () => {
    const b = new StoreBudget(100);
    b.admit([{ bytes: 500 }], () => {});
    expect(b.hasRoom()).toBe(true);
  });
});
