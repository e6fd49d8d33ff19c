import { readFileSync, statSync, existsSync } from 'node:fs';
import type { DestinationDocument } from '../../../../../api/destination-document.js';
import {
  checkDestinationDocument,
  TeamCredentialFiles,
  teamDestinationSettings,
} from '../../../../../ingester/destinations/team/team-destination.js';
import { unknownDestination } from '../../../../../ingester/routing/route-table.js';
import type { Route } from '../../../../../api/route.js';

const doc = (over: Partial<DestinationDocument> = {}): DestinationDocument => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'Destination',
  name: 'tickets',
  namespace: 'team-a',
  http: { url: 'http://127.0.0.1:9/hooks', basicAuth: { username: 'intake', password: 's3cret' }, batchSize: 5 },
  ...over,
});

describe('a team destination document', () => {
  it('becomes the settings of a platform destination, named <namespace>/<name>, with namespace and suspend set', () => {
    const files = new TeamCredentialFiles();
    try {
      const credentials = files.version();
      const s = teamDestinationSettings(checkDestinationDocument(doc({ suspend: true })), credentials.write);
      const dir = credentials.dir() as string;
      expect(s).toMatchObject({
        name: 'team-a/tickets',
        namespace: 'team-a',
        suspend: true,
        default: false,
        kind: 'http',
      });
      if (s.kind !== 'http') throw new Error('http');
      expect(s.http).toMatchObject({ url: 'http://127.0.0.1:9/hooks', batchSize: 5, timeoutMs: 5000 });
      const passwordFile = s.http.basicAuth?.passwordFile as string;
      expect(passwordFile.startsWith(dir)).toBe(true);
      expect(readFileSync(passwordFile, 'utf8')).toBe('s3cret');
      expect(statSync(passwordFile).mode & 0o777).toBe(0o600);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      credentials.remove();
      expect(existsSync(passwordFile)).toBe(false);
      // A destination without credentials writes nothing.
      const none = files.version();
      teamDestinationSettings(checkDestinationDocument(doc({ http: { url: 'http://r' } })), none.write);
      expect(none.dir()).toBeUndefined();
    } finally {
      files.close();
    }
  });

  it("takes autoPause as a platform destination's settings do: the given window, off, or the 24h default", () => {
    const none = (): never => {
      throw new Error('no credentials here');
    };
    const settings = (over: Partial<DestinationDocument>) =>
      teamDestinationSettings(checkDestinationDocument(doc({ http: { url: 'http://r' }, ...over })), none);
    expect(settings({ autoPause: { after: '2s' } }).protection.autoPause).toEqual({ afterMs: 2000 });
    expect(settings({ autoPause: { after: '1h30m' } }).protection.autoPause).toEqual({ afterMs: 5_400_000 });
    expect(settings({ autoPause: { enabled: false } }).protection.autoPause).toBeUndefined();
    expect(settings({}).protection.autoPause).toEqual({ afterMs: 24 * 3600_000 });
    expect(() => checkDestinationDocument(doc({ autoPause: { after: '0s' } }))).toThrow(
      'autoPause.after: must be longer than 0',
    );
    expect(() => checkDestinationDocument(doc({ autoPause: { after: 'tomorrow' } }))).toThrow(
      '/autoPause/after must match pattern',
    );
  });

  it('is refused naming the problem, never quoting a credential', () => {
    expect(() => checkDestinationDocument(doc({ namespace: 'Team_A' }))).toThrow('/namespace must match pattern');
    expect(() =>
      checkDestinationDocument(
        doc({ http: { url: 'http://r', bearerToken: 'tok', basicAuth: { username: 'u', password: 'p' } } }),
      ),
    ).toThrow('http: give basicAuth or bearerToken, not both');
    expect(() => checkDestinationDocument(doc({ alertmanager: { urls: ['http://r'] } }))).toThrow(
      'give exactly one of alertmanager or http',
    );
    try {
      checkDestinationDocument(doc({ http: { url: 'http://r', basicAuth: { username: 'u', password: '' } } }));
      throw new Error('not refused');
    } catch (err) {
      expect((err as Error).message).toContain('/http/basicAuth/password');
    }
  });
});

describe('a route naming team destinations', () => {
  const route = (destinations: string[]): Route => ({
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'WebhookIntegration',
    name: 'alerts',
    namespace: 'team-a',
    credentials: [],
    destinations,
  });
  const platform = [{ name: 'alertmanager', default: true }];

  it("is served naming its own namespace's destinations, known yet or not (they come and go while running)", () => {
    expect(unknownDestination(route(['alertmanager', 'team-a/tickets']), platform)).toBeUndefined();
  });

  it("is refused naming another namespace's destination", () => {
    expect(unknownDestination(route(['team-b/tickets']), platform)).toBe(
      'destinations of another namespace: team-b/tickets',
    );
  });
});
