/**
 * The outbox's reads of what is due walk one index that holds the namespace too: a read leaving
 * namespaces out (those at their share of a destination) skips their rows in the index, and never
 * reads a skipped row's record (the namespace is stored after the payload, so with the index of
 * older versions, (destination, next_at), each such read walked the whole backlog's records on
 * the event loop). A database of an older version gets the new index when it opens, and keeps its rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { OUTBOX_SQL, OutboxTable } from '../../../../../ingester/destinations/outbox/outbox-table.js';

const root = mkdtempSync(join(tmpdir(), 'intake-outbox-index-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const indexes = (db: DatabaseSync): string[] =>
  (
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'outbox'").all() as Array<{
      name: string;
    }>
  )
    .map((r) => r.name)
    .filter((n) => !n.startsWith('sqlite_autoindex'))
    .sort();

const plan = (db: DatabaseSync, sql: string, ...params: Array<string | number>): string =>
  (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join('; ');

it('reads what is due through the index that holds the namespace; the reads that leave namespaces out need no row', () => {
  const table = new OutboxTable(join(root, 'new'), 1 << 26);
  try {
    expect(indexes(table.db)).toEqual(['outbox_due_by_namespace']);
    // Handed out in order without a sort, from the index.
    expect(plan(table.db, OUTBOX_SQL.due, 'd', 1, 10)).toMatch(/USING INDEX outbox_due_by_namespace/);
    expect(plan(table.db, OUTBOX_SQL.due, 'd', 1, 10)).not.toMatch(/TEMP B-TREE/);
    expect(plan(table.db, OUTBOX_SQL.dueExcept, 'd', 1, '["a"]', 10)).toMatch(/USING INDEX outbox_due_by_namespace/);
    expect(plan(table.db, OUTBOX_SQL.dueExcept, 'd', 1, '["a"]', 10)).not.toMatch(/TEMP B-TREE/);
    // The index alone answers when the others' next row is due.
    expect(plan(table.db, OUTBOX_SQL.nextDueExcept, 'd', '["a"]')).toMatch(/COVERING INDEX outbox_due_by_namespace/);
    expect(plan(table.db, OUTBOX_SQL.nextDue, 'd')).toMatch(/COVERING INDEX outbox_due_by_namespace/);
  } finally {
    table.db.close();
  }
});

it('the reads give the rows of the namespaces not left out, in the order they are due', () => {
  const table = new OutboxTable(join(root, 'order'), 1 << 26);
  try {
    table.transaction(() => {
      for (let i = 0; i < 6; i++)
        table.db.prepare(OUTBOX_SQL.insert).run('d', `id-${i}`, `{"n":${i}}`, i % 2 === 0 ? 'a' : 'b', null);
    });
    const first = table.due('d', 0, 1)[0];
    table.lease(first?.seq ?? -1, 5_000);
    expect(table.due('d', 1_000, 10).map((r) => r.id)).toEqual(['id-1', 'id-2', 'id-3', 'id-4', 'id-5']);
    expect(table.due('d', 1_000, 10, ['a']).map((r) => r.id)).toEqual(['id-1', 'id-3', 'id-5']);
    expect(table.due('d', 10_000, 10, ['b']).map((r) => r.id)).toEqual(['id-2', 'id-4', 'id-0']);
    expect(table.nextDue('d', ['b'])).toBe(0);
    expect(table.nextDue('d', ['a', 'b'])).toBeNull();
  } finally {
    table.db.close();
  }
});

it("an older version's database gets the new index and keeps its rows", () => {
  const dir = join(root, 'older');
  const old = (() => {
    const table = new OutboxTable(dir, 1 << 26);
    table.db.close();
    // As an older version left it: the index without the namespace.
    const db = new DatabaseSync(join(dir, 'outbox.sqlite'));
    db.exec('DROP INDEX outbox_due_by_namespace; CREATE INDEX outbox_due ON outbox (destination, next_at);');
    db.prepare(OUTBOX_SQL.insert).run('d', 'kept', '{}', 'a', null);
    expect(indexes(db)).toEqual(['outbox_due']);
    return db;
  })();
  old.close();
  const table = new OutboxTable(dir, 1 << 26);
  try {
    expect(indexes(table.db)).toEqual(['outbox_due_by_namespace']);
    expect(table.due('d', 0, 10).map((r) => r.id)).toEqual(['kept']);
  } finally {
    table.db.close();
  }
});
