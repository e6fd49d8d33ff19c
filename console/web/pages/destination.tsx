/**
 * One destination's page. A team's own (a Destination resource): delivered and failed per minute
 * over the last hour, backlog and the oldest pending age, the circuit's state, the last success and
 * the last failure with the receiver's answer, Pause and Resume (spec.suspend, set as the user),
 * conditions, and its dead letters with the filtered bulk replay. A platform destination: what the
 * ingesters say of it (read-only) and this namespace's dead letters for it.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ViewProps } from '../views.js';
import { inertText } from '../../../common/sender-text.js';
import { Conditions } from '../components/conditions.js';
import { DeadLetters } from '../components/dead-letters.js';
import { MinuteChart } from '../components/minute-chart.js';
import { age, gitOpsOwner, href } from '../data/model.js';
import {
  chartMinutes,
  getDestination,
  getPlatformDestination,
  pausedOf,
  platformPausedText,
  setPaused,
  targetOf,
  type DeliveryAnswer,
  type DestinationResource,
  type PlatformDestination,
} from '../data/destinations.js';
import { usePolled } from '../components/use-polled.js';
import { useTick } from '../components/use-tick.js';
import { DestinationBadges } from './destinations.js';

/** How often the page reads the destination again (the operator merges reports every few seconds). */
const REFRESH_MS = 5000;

function Answer({ a, now }: { a: Partial<DeliveryAnswer> | undefined; now: number }) {
  if (!a?.time) return <>—</>;
  return (
    <>
      {age(a.time, now)} ({inertText(a.time)}){a.statusCode !== undefined ? `: HTTP ${a.statusCode}` : ': no answer'}
      {a.excerpt && <pre class="code excerpt">{inertText(a.excerpt, 256)}</pre>}
    </>
  );
}

function Delivery({ r, now }: { r: DestinationResource; now: number }) {
  const d = r.status?.delivery;
  return (
    <section aria-labelledby="h-delivery">
      <h2 id="h-delivery">Delivery</h2>
      <figure class="activity-chart">
        <MinuteChart
          minutes={chartMinutes(d?.minutes)}
          now={now}
          width={600}
          height={80}
          detailed
          words={{ up: 'delivered', down: 'failed' }}
        />
        <div class="chart-axis" style={{ width: '600px' }}>
          <span>60 min ago</span>
          <span>now</span>
        </div>
        <figcaption class="muted">Per minute over the last hour: delivered above the line, failed below.</figcaption>
      </figure>
      {!d && <p class="muted">The ingesters have not reported this destination yet.</p>}
      <dl class="kv delivery">
        <dt>Delivered, last hour</dt>
        <dd class="delivered">{d?.deliveredLastHour ?? '—'}</dd>
        <dt>Failed, last hour</dt>
        <dd class="failed">{d?.failedLastHour ?? '—'}</dd>
        <dt>Dead-lettered, last hour</dt>
        <dd class="dead-lettered">{d?.deadLetteredLastHour ?? '—'}</dd>
        <dt>Backlog</dt>
        <dd class="backlog">{d?.backlog ?? '—'}</dd>
        <dt>Oldest pending</dt>
        <dd class="oldest-pending">{d?.oldestPendingAge ?? '—'}</dd>
        <dt>Last success</dt>
        <dd class="last-success">
          <Answer a={d?.lastSuccess} now={now} />
        </dd>
        <dt>Last failure</dt>
        <dd class="last-failure">
          <Answer a={d?.lastFailure} now={now} />
        </dd>
        <dt>Reported</dt>
        <dd>{d?.updatedTime ? age(d.updatedTime, now) : '—'}</dd>
      </dl>
    </section>
  );
}

function TeamDestination({ ns, name }: { ns: string; name: string }) {
  const [r, setR] = useState<DestinationResource | undefined>();
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const now = useTick(5000);
  usePolled(
    () => getDestination(ns, name),
    REFRESH_MS,
    setR,
    (e) => setError(e.message),
    [ns, name],
  );
  if (!r)
    return error ? (
      <p class="error" role="alert">
        {error}
      </p>
    ) : (
      <p class="loading">Loading…</p>
    );
  const suspended = r.spec?.suspend === true;
  // Held by spec.suspend, or by an auto-pause (which Resume ends too).
  const held = pausedOf(r);
  const owner = gitOpsOwner(r);
  const toggle = async () => {
    setBusy(true);
    setError('');
    try {
      setR(await setPaused(ns, name, !held.paused));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <section aria-labelledby="h-destination">
        <h1 id="h-destination">
          {name} <DestinationBadges r={r} />
        </h1>
        <dl class="kv">
          <dt>Sends to</dt>
          <dd class="url">{inertText(targetOf(r))}</dd>
          <dt>Ingesters' name</dt>
          <dd>{inertText(r.status?.destinationName ?? `${ns}/${name}`)}</dd>
        </dl>
        <div class="actions">
          <button
            type="button"
            class={held.paused ? '' : 'secondary'}
            onClick={toggle}
            disabled={busy || (owner !== undefined && !(held.paused && !suspended))}
            title={owner ? `managed by ${owner.tool}: change spec.suspend in Git` : undefined}
          >
            {held.paused ? 'Resume' : 'Pause'}
          </button>
          <span class="hint">
            {suspended
              ? 'spec.suspend is true: events are held (not dropped) and delivered on resume.'
              : held.paused
                ? `${held.why}: events are held; Resume ends it (the receiver should be fixed first).`
                : 'Pausing sets spec.suspend: events are held, not dropped, until resumed.'}
          </span>
        </div>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </section>
      <Delivery r={r} now={now} />
      <Conditions r={r} now={now} />
    </>
  );
}

function PlatformDestinationView({ ns, name }: { ns: string; name: string }) {
  const [d, setD] = useState<PlatformDestination | undefined>();
  const [error, setError] = useState('');
  useEffect(() => {
    getPlatformDestination(ns, name).then(setD, (e: Error) => setError(e.message));
  }, [ns, name]);
  return (
    <section aria-labelledby="h-destination">
      <h1 id="h-destination">
        {name} <span class="badge unknown">platform</span>
      </h1>
      <p class="hint">
        The platform team configures this destination for every namespace; pausing it is theirs (intake destination
        pause). Your namespace's dead letters for it are below.
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {d && (
        <dl class="kv">
          <dt>Kind</dt>
          <dd>{inertText(d.kind ?? '')}</dd>
          <dt>Circuit</dt>
          <dd class="circuit">{inertText(d.circuit ?? '')}</dd>
          <dt>Paused</dt>
          <dd class="paused">{platformPausedText(d)}</dd>
        </dl>
      )}
    </section>
  );
}

/** The views `ns/:ns/destinations/:name` (the namespace's own) and `ns/:ns/platform-destinations/:name`. */
export const TeamDestinationPage = ({ params }: ViewProps<'ns' | 'name'>) => (
  <DestinationPage ns={params.ns} name={params.name} platform={false} />
);
export const PlatformDestinationPage = ({ params }: ViewProps<'ns' | 'name'>) => (
  <DestinationPage ns={params.ns} name={params.name} platform={true} />
);

export function DestinationPage({ ns, name, platform }: { ns: string; name: string; platform: boolean }) {
  return (
    <main class="destination">
      <p>
        <a href={href('ns', ns, 'destinations')}>← Destinations</a>
      </p>
      {platform ? <PlatformDestinationView ns={ns} name={name} /> : <TeamDestination ns={ns} name={name} />}
      <DeadLetters ns={ns} scope={platform ? 'platform-destinations' : 'destinations'} name={name} />
    </main>
  );
}
