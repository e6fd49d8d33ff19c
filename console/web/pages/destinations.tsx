/**
 * A namespace's destinations: the team's own (Destination resources: Ready, Paused, circuit, last
 * delivery, backlog and the last hour per minute) and, read-only, the platform's ones the
 * ingesters know. One request per refresh for the whole list, never one per destination or
 * integration: the page stays as cheap at a thousand integrations as at one.
 */
import { useState } from 'preact/hooks';
import type { ViewProps } from '../views.js';
import { inertText } from '../../../common/sender-text.js';
import { MinuteChart } from '../components/minute-chart.js';
import { usePolled } from '../components/use-polled.js';
import { useTick } from '../components/use-tick.js';
import { age, gitOpsOwner, href } from '../data/model.js';
import {
  chartMinutes,
  circuitOf,
  listDestinations,
  pausedOf,
  platformPausedText,
  targetOf,
  type DestinationList,
  type DestinationResource,
} from '../data/destinations.js';

/** How often the list is read again: the operator merges the ingesters' reports every few seconds. */
export const REFRESH_MS = 10_000;

export function DestinationBadges({ r }: { r: DestinationResource }) {
  const ready = r.status?.conditions?.find((c) => c.type === 'Ready');
  const paused = pausedOf(r);
  const circuit = circuitOf(r);
  const readyClass = ready?.status === 'True' ? 'ok' : ready?.status === 'False' ? 'bad' : 'unknown';
  const owner = gitOpsOwner(r);
  return (
    <>
      <span
        class={`badge ${readyClass} ready`}
        title={inertText(ready?.message ?? 'the operator has not reported yet')}
      >
        {ready?.status === 'True'
          ? 'Ready'
          : ready?.status === 'False'
            ? `Not ready: ${ready.reason ?? ''}`
            : 'Pending'}
      </span>{' '}
      {paused.paused && (
        <span class="badge warn paused" title={paused.why}>
          Paused{paused.why && paused.why !== 'Paused' ? ` (${paused.why})` : ''}
        </span>
      )}{' '}
      <span
        class={`badge circuit ${circuit.state === 'Closed' ? 'ok' : circuit.state === 'Unknown' ? 'unknown' : 'bad'}`}
        title={inertText(circuit.message)}
      >
        circuit {circuit.state}
      </span>
      {owner && (
        <>
          {' '}
          <span class="badge gitops" title={`managed by ${owner.tool} (${owner.owner}): change it in Git`}>
            {owner.tool}
          </span>
        </>
      )}
    </>
  );
}

function TeamTable({ ns, items, now }: { ns: string; items: DestinationResource[]; now: number }) {
  if (!items.length)
    return (
      <p class="empty">
        None yet. A team adds one with <code>kubectl apply</code> (docs/destinations.md).
      </p>
    );
  return (
    <table data-kind="destinations">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">State</th>
          <th scope="col">Sends to</th>
          <th scope="col">Last delivery</th>
          <th scope="col">Backlog</th>
          <th scope="col">Last hour</th>
        </tr>
      </thead>
      <tbody>
        {items.map((r) => {
          const delivery = r.status?.delivery;
          return (
            <tr key={r.metadata.name} data-name={r.metadata.name}>
              <th scope="row">
                <a href={href('ns', ns, 'destinations', r.metadata.name)}>{r.metadata.name}</a>
              </th>
              <td class="state">
                <DestinationBadges r={r} />
              </td>
              <td class="url">{inertText(targetOf(r))}</td>
              <td class="last-success">{delivery?.lastSuccess ? age(delivery.lastSuccess.time, now) : '—'}</td>
              <td class="backlog">
                {delivery?.backlog ?? '—'}
                {delivery?.oldestPendingAge && delivery.backlog ? ` (oldest ${delivery.oldestPendingAge})` : ''}
              </td>
              <td class="chart">
                <MinuteChart
                  minutes={chartMinutes(delivery?.minutes)}
                  now={now}
                  words={{ up: 'delivered', down: 'failed' }}
                />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** The view `ns/:ns/destinations`. */
export const DestinationsPage = ({ params }: ViewProps<'ns'>) => <Destinations ns={params.ns} />;

export function Destinations({ ns }: { ns: string }) {
  const [list, setList] = useState<DestinationList | undefined>();
  const [error, setError] = useState('');
  const now = useTick(5000);
  usePolled(
    () => listDestinations(ns),
    REFRESH_MS,
    (l) => {
      setError('');
      setList(l);
    },
    (e) => setError(e.message),
    [ns],
  );
  const team = [...(list?.items ?? [])].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const platform = list?.platform;
  return (
    <main class="destinations">
      <section aria-labelledby="h-destinations">
        <div class="section-head">
          <h2 id="h-destinations">Destinations {list && <span class="count">{team.length}</span>}</h2>
          <a class="button secondary" href={href('ns', ns)}>
            Integrations
          </a>
        </div>
        <p class="hint">
          This namespace's own receivers: its integrations name them in spec.destinations and spec.rules.
        </p>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {!list && !error && <p class="loading">Loading…</p>}
        {list && <TeamTable ns={ns} items={team} now={now} />}
      </section>
      <section aria-labelledby="h-platform-destinations">
        <h2 id="h-platform-destinations">Platform destinations</h2>
        <p class="hint">
          Configured by the platform team for every namespace (read-only here; a destination of this namespace with the
          same name wins). Their dead letters of this namespace can be replayed from their page.
        </p>
        {platform?.message && <p class="muted">Not known: {platform.message}.</p>}
        {platform?.items && platform.items.length === 0 && <p class="empty">None.</p>}
        {platform?.items && platform.items.length > 0 && (
          <table data-kind="platform-destinations">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Circuit</th>
                <th scope="col">Paused</th>
              </tr>
            </thead>
            <tbody>
              {platform.items.map((d) => (
                <tr key={d.name} data-name={d.name}>
                  <th scope="row">
                    <a href={href('ns', ns, 'platform-destinations', d.name)}>{inertText(d.name)}</a>
                    {team.some((t) => t.metadata.name === d.name) && (
                      <span class="badge unknown" title="this namespace's own destination of the same name wins here">
                        shadowed
                      </span>
                    )}
                  </th>
                  <td>{inertText(d.kind ?? '')}</td>
                  <td>{inertText(d.circuit ?? '')}</td>
                  <td>{platformPausedText(d)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </main>
  );
}
