/**
 * A team's destinations added, replaced and removed while delivering from the outbox
 * (set-up-destinations.ts setTeamDestinations): the same dispatcher and outbox paths as a platform
 * destination, a new version delivering with its new settings, the rows of a removed one
 * discarded (not held for nobody), and nothing held for a team destination the ingester lacks.
 */
import { DEFAULT_ADDRESS_GUARD } from '../../../../../ingester/destinations/address-guard-settings.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { DestinationDocument } from '../../../../../api/destination-document.js';
import type { NormalisedEvent } from '../../../../../ingester/core/event.js';
import type { DeadLetterStore } from '../../../../../ingester/dead-letters/model.js';
import { setUpDestinations, type Destinations } from '../../../../../ingester/destinations/set-up-destinations.js';
import { teamDestinationSettings } from '../../../../../ingester/destinations/team/team-destination.js';
import { RouteTable } from '../../../../../ingester/routing/route-table.js';
import { startEventReceiver, type EventReceiver } from '../../../../e2e/support/event-receiver.js';
import { waitFor } from '../../../../support/waiting.js';

let dir: string;
let receiver: EventReceiver;
let destinations: Destinations;

const noWrite = (field: string): string => `/nonexistent/${field}`;
const team = (version: string, headers: Record<string, string> = {}) => {
  const doc: DestinationDocument = {
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'Destination',
    name: 'tickets',
    namespace: 'team-a',
    http: { url: receiver.url, headers },
    delivery: { backoffMin: '50ms', backoffMax: '100ms' },
    circuitBreaker: { enabled: false },
  };
  return { settings: teamDestinationSettings(doc, noWrite), version };
};
const event = (id: string): NormalisedEvent =>
  ({
    id,
    integration: 'alerts',
    namespace: 'team-a',
    source: id,
    received_at: new Date().toISOString(),
  }) as NormalisedEvent;
const rowsFor = (name: string): number => {
  const db = new DatabaseSync(join(dir, 'outbox.sqlite'), { readOnly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM outbox WHERE destination = ?').get(name) as { n: number }).n;
  } finally {
    db.close();
  }
};
const noLetters: DeadLetterStore = {
  description: 'none',
  put: async () => 'x',
  list: async () => [],
  claim: async () => undefined,
  release: async () => undefined,
  remove: async () => undefined,
  usage: () => ({ bytes: 0, namespaces: new Map() }),
} as unknown as DeadLetterStore;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'intake-team-live-'));
  receiver = await startEventReceiver();
  const { table } = RouteTable.build(
    [
      {
        source: 'a',
        route: {
          apiVersion: 'intake.dev/v1alpha1',
          kind: 'WebhookIntegration',
          name: 'alerts',
          namespace: 'team-a',
          credentials: [{ username: 'a', secret: { plain: 'pw' } }],
          destinations: ['team-a/tickets'],
        },
      },
    ],
    { allowPlaintext: true, destinations: [] },
  );
  destinations = setUpDestinations({
    destinations: [],
    routes: () => table,
    registry: new Registry(),
    logger: pino({ level: 'silent' }),
    storage: {
      path: dir,
      maxBytes: 64 << 20,
      maxBytesPerNamespace: 64 << 20,
      replayBatch: 100,
      replayBackoffMinMs: 50,
      replayBackoffMaxMs: 100,
    },
    deadLetters: noLetters,
    // The receivers are on loopback, which a team's URL may not reach by default.
    addressGuard: { ...DEFAULT_ADDRESS_GUARD, allowedCIDRs: ['127.0.0.0/8', '::1/128'] },
  });
});

afterAll(async () => {
  await destinations?.close();
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

const handOff = (id: string) => destinations.sink?.handOff([event(id)]);
const received = (id: string) =>
  waitFor(`${id} delivered`, async () => receiver.requests.find((r) => r.events.some((e) => e.id === id)), 10_000);

describe("a team's destinations while running", () => {
  it('holds nothing for a team destination this ingester does not have yet', async () => {
    destinations.start();
    await handOff('before');
    expect(rowsFor('team-a/tickets')).toBe(0);
  });

  it('delivers to one added while running', async () => {
    await destinations.setTeamDestinations([team('1')]);
    expect(destinations.names).toEqual(['team-a/tickets']);
    await handOff('added');
    await received('added');
  });

  it('delivers with the new settings once its version changes, the events waiting kept', async () => {
    receiver.failWith = { status: 503 };
    await handOff('waiting');
    await waitFor(
      'a failed attempt',
      async () => receiver.requests.some((r) => r.events.some((e) => e.id === 'waiting')),
      10_000,
    );
    await destinations.setTeamDestinations([team('2', { 'x-version': '2' })]);
    receiver.failWith = undefined;
    await waitFor('delivered', async () => receiver.accepted.has('waiting'), 10_000);
    const accepted = receiver.requests.find(
      (r) => r.events.some((e) => e.id === 'waiting') && r.answer !== 'reset' && r.answer.status < 300,
    );
    expect(accepted?.headers['x-version']).toBe('2');
  });

  it('discards the events waiting for one removed, and holds none after', async () => {
    receiver.failWith = { status: 503 };
    await handOff('orphan');
    expect(rowsFor('team-a/tickets')).toBe(1);
    await destinations.setTeamDestinations([]);
    expect(destinations.names).toEqual([]);
    expect(rowsFor('team-a/tickets')).toBe(0);
    await handOff('after');
    expect(rowsFor('team-a/tickets')).toBe(0);
  });
});
