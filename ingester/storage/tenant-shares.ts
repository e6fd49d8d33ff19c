/**
 * Each tenant's share of a local store (the spool): bytes it holds, checked before anything is
 * written, so that one namespace's burst cannot take the whole store from the others
 * (docs/design.md §4b, rule 1). A request is admitted whole or refused whole, like StoreBudget.
 */
export class TenantShares {
  private readonly used = new Map<string, number>();

  /** The most one tenant may hold. */
  constructor(readonly max: number) {}

  usedBy(tenant: string): number {
    return this.used.get(tenant) ?? 0;
  }

  /** The tenants holding bytes. */
  tenants(): Iterable<string> {
    return this.used.keys();
  }

  /** Bytes every tenant holds together. */
  total(): number {
    let sum = 0;
    for (const bytes of this.used.values()) sum += bytes;
    return sum;
  }

  /** The members of a commit group that fit their tenant's share, in order; `refuse` is called for each of the others. */
  admit<T extends { tenant: string; bytes: number }>(group: readonly T[], refuse: (item: T) => void): T[] {
    const projected = new Map<string, number>();
    const admitted: T[] = [];
    for (const item of group) {
      const after = (projected.get(item.tenant) ?? this.usedBy(item.tenant)) + item.bytes;
      if (after > this.max) {
        refuse(item);
        continue;
      }
      projected.set(item.tenant, after);
      admitted.push(item);
    }
    return admitted;
  }

  add(tenant: string, bytes: number): void {
    this.used.set(tenant, this.usedBy(tenant) + bytes);
  }

  release(tenant: string, bytes: number): void {
    const left = this.usedBy(tenant) - bytes;
    if (left > 0) this.used.set(tenant, left);
    else this.used.delete(tenant);
  }

  clear(): void {
    this.used.clear();
  }
}
