import { DiscardPolicy } from '@nats-io/jetstream';
import type { JetStreamSettings } from '../../../../ingester/sinks/handoff-config.js';
import { resolveJetStream } from '../../../../ingester/sinks/handoff-config.js';
import {
  eventSubject,
  limitChanges,
  mergedSubjects,
  readEventSubject,
  streamProblems,
  subjectCovers,
  wantedStream,
} from '../../../../ingester/sinks/jetstream-stream.js';

const minutes = (m: number): number => m * 60 * 1e9;

describe('stream checks', () => {
  it.each([
    ['intake.events.>', true],
    ['intake.>', true],
    ['>', true],
    ['*.events.>', true],
    ['intake.events.*', false],
    ['intake.events.*.*', false],
    ['other.>', false],
  ])('subject %s covers intake.events.>: %s', (pattern, covers) => {
    expect(subjectCovers(pattern, 'intake.events.>')).toBe(covers);
  });

  it('accepts a stream with covering subjects, discard new and a 15 minute duplicate window', () => {
    expect(
      streamProblems(
        { subjects: ['intake.>'], discard: DiscardPolicy.New, duplicate_window: minutes(15) },
        'intake.events',
      ),
    ).toEqual([]);
  });

  it('names every problem of a stream that breaks the guarantees', () => {
    const problems = streamProblems(
      { subjects: ['other.>'], discard: DiscardPolicy.Old, duplicate_window: minutes(2) },
      'intake.events',
    );
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/do not cover intake\.events\.> \(events are published to intake\.events\./);
    expect(problems[1]).toMatch(/discard policy is "old"/);
    expect(problems[2]).toMatch(/duplicate_window is 120s; intake needs at least 900s/);
  });

  it('creates the stream on <prefix>.>, and adds it to an existing one only when no subject covers it', () => {
    const settings = resolveJetStream({ url: 'nats://x' }) as JetStreamSettings;
    expect(wantedStream(settings).subjects).toEqual(['intake.events.>']);
    expect(mergedSubjects(['intake.events.>'], 'intake.events')).toEqual(['intake.events.>']);
    expect(mergedSubjects(['other.>', 'intake.events.*'], 'intake.events')).toEqual([
      'other.>',
      'intake.events.*',
      'intake.events.>',
    ]);
    expect(mergedSubjects(['intake.>'], 'intake.events')).toEqual(['intake.>']);
  });

  it('names the limits an existing stream does not have yet, treating 0 and -1 alike as no limit', () => {
    const day = 24 * 3600 * 1e9;
    expect(
      limitChanges({ max_age: 0, max_bytes: -1, max_msgs: -1 }, { max_age: 3 * day, max_bytes: -1, max_msgs: -1 }),
    ).toEqual([`max_age 0 -> ${3 * day}`]);
    expect(
      limitChanges({ max_age: day, max_bytes: 0, max_msgs: -1 }, { max_age: day, max_bytes: -1, max_msgs: 0 }),
    ).toEqual([]);
    expect(
      limitChanges({ max_age: day, max_bytes: -1, max_msgs: -1 }, { max_age: day, max_bytes: 1024, max_msgs: -1 }),
    ).toEqual(['max_bytes -1 -> 1024']);
  });
});

describe('event subjects', () => {
  it('names namespace and integration, and a replay its one destination, and reads them back', () => {
    const plain = eventSubject('intake.events', { namespace: 'team-a', integration: 'web_hooks-1' });
    expect(plain).toBe('intake.events.team-a.web_hooks-1');
    expect(readEventSubject('intake.events', plain)).toEqual({ namespace: 'team-a', integration: 'web_hooks-1' });
    const replay = eventSubject('intake.events', { namespace: 'team-a', integration: 'x', onlyFor: 'tickets' });
    expect(replay).toBe('intake.events.team-a.x.tickets');
    expect(readEventSubject('intake.events', replay)).toEqual({
      namespace: 'team-a',
      integration: 'x',
      onlyFor: 'tickets',
    });
  });

  it('reads nothing from a subject it does not make, so the event itself is asked', () => {
    expect(readEventSubject('intake.events', 'intake.events.replayed')).toBeUndefined();
    expect(readEventSubject('intake.events', 'intake.eventsX.a.b')).toBeUndefined();
    expect(readEventSubject('intake.events', 'other.a.b')).toBeUndefined();
    expect(readEventSubject('intake.events', 'intake.events.a.b.c.d')).toBeUndefined();
  });

  it("reads back the destinations routing rules chose: one as a replay's, several, or none", () => {
    const round = (decided: string[]): unknown =>
      readEventSubject('intake.events', eventSubject('intake.events', { namespace: 'ns', integration: 'i', decided }));
    expect(round(['pager'])).toEqual({ namespace: 'ns', integration: 'i', onlyFor: 'pager' });
    expect(round(['pager', 'tickets'])).toEqual({ namespace: 'ns', integration: 'i', decided: ['pager', 'tickets'] });
    expect(round([])).toEqual({ namespace: 'ns', integration: 'i', decided: [] });
    expect(eventSubject('intake.events', { namespace: 'ns', integration: 'i', decided: ['a', 'b'] })).toBe(
      'intake.events.ns.i._.a.b',
    );
  });
});
