/**
 * A bound on request-body bytes held in memory at once, across all requests. A body is reserved
 * (its Content-Length, or the body limit when the length is not announced) once the sender has
 * authenticated and before any of it is read, and released when the answer is sent or the
 * connection goes away. Past the bound the request is answered 503: slow or stalled uploads cannot
 * grow memory without limit.
 */
export class BodyBudget {
  private held = 0;

  constructor(readonly maxBytes: number) {}

  get heldBytes(): number {
    return this.held;
  }

  /** Returns a release function, or undefined when the budget cannot take `bytes` now. */
  reserve(bytes: number): (() => void) | undefined {
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
