/**
 * What the integration or API key received in the last hour (status.activity, merged by the
 * operator from every ingester): the per-minute chart, the counts by reason, and who was refused.
 */
import { age } from '../data/model.js';
import type { Activity, Resource } from '../data/resources.js';
import { MinuteChart } from './minute-chart.js';
import { RecentRefusals, UnauthenticatedSenders } from './refusal-tables.js';
import { useTick } from './use-tick.js';

export function ActivityView({ r }: { r: Resource }) {
  const now = useTick(5000);
  const a = r.status?.activity;
  return (
    <section aria-labelledby="h-activity">
      <h2 id="h-activity">Activity</h2>
      {!a ? (
        <p class="muted">No activity reported yet (the operator writes status.activity from what the ingesters saw).</p>
      ) : (
        <>
          <figure class="activity-chart">
            <MinuteChart minutes={a.minutes} now={now} width={480} height={96} detailed />
            <div class="chart-axis" style={{ width: '480px' }}>
              <span>60 min ago</span>
              <span>now</span>
            </div>
            <figcaption class="muted">
              Per minute over the last hour, newest on the right: events accepted above the line, requests refused
              below.
            </figcaption>
          </figure>
          <Counts a={a} now={now} />
          <h3>Recent refusals</h3>
          <p class="muted">Requests that proved their credentials. The User-Agent is what the sender claimed.</p>
          <RecentRefusals refusals={a.recentRefusals ?? []} now={now} />
          <UnauthenticatedSenders senders={a.unauthenticatedSenders ?? []} now={now} />
        </>
      )}
    </section>
  );
}

function Counts({ a, now }: { a: Activity; now: number }) {
  const reasons = Object.entries(a.refusalsLastHour ?? {});
  return (
    <dl class="kv activity">
      <dt>Last event</dt>
      <dd class="last-event">{a.lastEventTime ? `${age(a.lastEventTime, now)} (${a.lastEventTime})` : 'never'}</dd>
      <dt>Events, last hour</dt>
      <dd class="events-1h">
        {a.eventsLastHour ?? 0}
        {(a.droppedByRuleLastHour ?? 0) > 0 && (
          <span class="muted"> (dropped by routing rules: {a.droppedByRuleLastHour})</span>
        )}
      </dd>
      <dt>Refused, last hour</dt>
      <dd class="refused-1h">
        {a.refusedLastHour ?? 0}
        {reasons.length > 0 && (
          <span class="muted"> ({reasons.map(([reason, n]) => `${reason}: ${n}`).join(', ')})</span>
        )}
      </dd>
      <dt>Last refusal</dt>
      <dd>{a.lastRefusalTime ? age(a.lastRefusalTime, now) : 'never'}</dd>
    </dl>
  );
}
