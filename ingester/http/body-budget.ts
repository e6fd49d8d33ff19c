/**
 * Bounds on request-body bytes held in memory at once. A body is reserved (its Content-Length, or
 * the body limit when the length is not announced) before any of it is read, and released when
 * the answer is sent or the connection goes away (http/body-admission.ts decides which budgets).
 */

/** Gives a reservation back; calling it again does nothing. */
export type Release = () => void;

/** One bound across every request charged to it. */
export class BodyBudget {
  private held = 0;

  constructor(readonly maxBytes: number) {}

  get heldBytes(): number {
    return this.held;
  }

  /**
   * Returns a release function, or undefined when the budget cannot take `bytes` now. An empty
   * budget always takes one body, so a bound set below the body limit still lets bodies through
   * one at a time.
   */
  reserve(bytes: number): Release | undefined {
    if (this.held + bytes > this.maxBytes && this.held > 0) return undefined;
    this.held += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= bytes;
    };
  }
}

/**
 * The same bound for each key on its own (a source address, an integration, a namespace): what
 * one key holds never limits another. Only keys holding bytes are kept, so its size is bounded by
 * the requests being received.
 */
export class KeyedBodyBudget {
  private readonly held = new Map<string, number>();

  constructor(readonly maxBytesPerKey: number) {}

  heldBytes(key: string): number {
    return this.held.get(key) ?? 0;
  }

  /** Returns a release function, or undefined when `key` cannot take `bytes` now (an empty key takes one body). */
  reserve(key: string, bytes: number): Release | undefined {
    const now = this.held.get(key) ?? 0;
    if (now + bytes > this.maxBytesPerKey && now > 0) return undefined;
    this.held.set(key, now + bytes);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.held.get(key) ?? bytes) - bytes;
      if (left <= 0) this.held.delete(key);
      else this.held.set(key, left);
    };
  }
}
