import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
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

  it('opens an outbox of an earlier version (no trace column): its rows carry none', () => {
    const dir = tempDir();
    const old = new DatabaseSync(join(dir, 'outbox.sqlite'));
    old.exec(`CREATE TABLE outbox (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, destination TEXT NOT NULL, id TEXT NOT NULL, payload TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL, last_error TEXT,
      tenant TEXT NOT NULL DEFAULT '', UNIQUE (destination, id))`);
    old.prepare("INSERT INTO outbox (destination, id, payload, next_at) VALUES ('a', 'e0', '{}', 0)").run();
    old.close();
    const table = new OutboxTable(dir, 1 << 20);
    const [due] = table.due('a', Date.now(), 10);
    expect(due?.id).toBe('e0');
    expect(carrierOfText(due?.trace)).toBeUndefined();
    table.db.close();
  });
});
