/**
 * A prom-client Counter's counts kept in cells, one per label set, and added to the counter when
 * the registry reads it (the counter's `collect`), so a scrape sees every count made before it.
 *
 * Why: prom-client's `inc(labels, n)` builds a key string from the labels object and checks every
 * label on each call. The single-event path counts four times per request (the request, the events
 * received and processed), and that look-up was a measurable part of its cost; a cell is found by
 * two Map look-ups on values the caller already has, and adding to it allocates nothing.
 */
import type { Counter, LabelValues } from 'prom-client';

interface Cell<L extends string> {
  readonly labels: LabelValues<L>;
  pending: number;
}

export class CounterCells<L extends string> {
  private readonly cells = new Map<string | number, Map<string | number, Cell<L>>>();
  /** Cells with counts the counter has not been given yet. */
  private readonly dirty: Cell<L>[] = [];

  /**
   * `labelsOf`: the labels of the cell the two keys name (called once per cell). The counter must
   * call `flush` in its `collect`.
   */
  constructor(
    private readonly counter: Counter<L>,
    private readonly labelsOf: (a: string, b: string | number) => LabelValues<L>,
  ) {}

  /** Counts `n` (a non-negative number, as Counter.inc takes) for the label set `a`, `b` name. */
  add(a: string, b: string | number, n = 1): void {
    let byB = this.cells.get(a);
    if (!byB) this.cells.set(a, (byB = new Map()));
    let cell = byB.get(b);
    if (!cell) {
      cell = { labels: this.labelsOf(a, b), pending: 0 };
      byB.set(b, cell);
      // The series exists from its first count on, even a count of 0, as with Counter.inc.
      this.counter.inc(cell.labels, 0);
    }
    // Refused here, as Counter.inc refuses it, rather than at the next scrape.
    if (!Number.isFinite(n) || n < 0) throw new TypeError(`a counter cannot count ${n}`);
    if (n === 0) return;
    if (cell.pending === 0) this.dirty.push(cell);
    cell.pending += n;
  }

  /** Hands every pending count to the counter. */
  flush(): void {
    for (const cell of this.dirty) {
      this.counter.inc(cell.labels, cell.pending);
      cell.pending = 0;
    }
    this.dirty.length = 0;
  }
}
