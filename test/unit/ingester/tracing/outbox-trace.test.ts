import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OutboxTable, rowBytes } from '../../../../ingester/destinations/outbox/outbox-table.js';
import { carrierOfText, carrierText } from '../../../../ingester/tracing/carrier.js';

const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'intake-outbox-trace-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const carrier = { traceparent: `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01`, tracestate: 'vendor=x' };

describe("the outbox keeps a row's trace context", () => {
  it('stores it with the row, hands it out, and counts its bytes, also after a restart', () => {
    const dir = tempDir();
    const table = new OutboxTable(dir, 1 << 20);
    const row = { destination: 'a', id: 'e1', payload: '{"id":"e1"}', tenant: 'team', trace: carrierText(carrier) };
    const bytes = table.insert(row);
    expect(bytes).toBe(rowBytes('a', 'e1', '{"id":"e1"}') + carrierText(carrier).length);
    table.count('team', bytes);
    const [due] = table.due('a', Date.now(), 10);
    expect(carrierOfText(due?.trace)).toEqual(carrier);
    table.db.close();
    // A restart counts what the rows hold the same way.
    const again = new OutboxTable(dir, 1 << 20);
    expect(again.budget.used).toBe(bytes);
    again.relaxedTransaction(() => again.remove(again.due('a', Date.now(), 10)[0]!));
    expect(again.budget.used).toBe(0);
    again.db.close();
  });
});
