/** The namespace page: integrations and API keys with Ready, URL, Last Event, Refused 1h and the last hour per minute, live. */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { inertText } from '../../../common/sender-text.js';
import { LABEL_OF, type Plural, type Resource } from '../data/api.js';
import type { LiveState } from '../data/live.js';
import { age, gitOpsOwner, href, isSuspended, readyCondition } from '../data/model.js';
import { MinuteChart } from '../components/minute-chart.js';

/** Re-renders every `ms` so ages ("5 s ago") move without new data. */
export function useTick(ms: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

export function ReadyBadge({ resource }: { resource: Resource }) {
  const ready = readyCondition(resource);
  const status = ready?.status ?? 'Unknown';
  const cls = status === 'True' ? 'ok' : status === 'False' ? 'bad' : 'unknown';
  return (
    <span
      class={`badge ${cls}`}
      title={ready?.message !== undefined ? inertText(ready.message) : 'the operator has not reported yet'}
    >
      {status === 'True' ? 'Ready' : status === 'False' ? `Not ready: ${ready?.reason ?? ''}` : 'Pending'}
    </span>
  );
}

export function GitOpsBadge({ resource }: { resource: Resource }) {
  const owner = gitOpsOwner(resource);
  if (!owner) return null;
  return (
    <span class="badge gitops" title={`managed by ${owner.tool} (${owner.owner}): change it in Git`}>
      {owner.tool}
    </span>
  );
}

function Table({ ns, plural, items, now }: { ns: string; plural: Plural; items: Resource[]; now: number }) {
  const tableRef = useRef<HTMLTableElement>(null);
  // When the first rows were in the document, for the 1,000-integration measurement (docs/benchmarks.md).
  useLayoutEffect(() => {
    if (items.length && tableRef.current && !tableRef.current.dataset.renderedMs)
      tableRef.current.dataset.renderedMs = String(Math.round(performance.now()));
  }, [items.length > 0]);
  if (!items.length) return <p class="empty">None yet.</p>;
  return (
    <table ref={tableRef} data-plural={plural}>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Ready</th>
          <th scope="col">URL</th>
          <th scope="col">Last Event</th>
          <th scope="col">Refused 1h</th>
          <th scope="col">Last hour</th>
        </tr>
      </thead>
      <tbody>
        {items.map((r) => {
          const activity = r.status?.activity;
          return (
            <tr key={r.metadata.name} data-name={r.metadata.name}>
              <th scope="row">
                <a href={href('ns', ns, plural, r.metadata.name)}>{r.metadata.name}</a> <GitOpsBadge resource={r} />
                {isSuspended(r) && <span class="badge warn">Suspended</span>}
              </th>
              <td class="ready">
                <ReadyBadge resource={r} />
              </td>
              <td class="url">{r.status?.url ?? ''}</td>
              <td class="last-event">{activity?.lastEventTime ? age(activity.lastEventTime, now) : '—'}</td>
              <td class="refused">{activity ? String(activity.refusedLastHour ?? 0) : '—'}</td>
              <td class="chart">
                <MinuteChart minutes={activity?.minutes} now={now} />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

export function List({ ns, live }: { ns: string; live: LiveState }) {
  const now = useTick(5000);
  return (
    <main>
      {(['webhookintegrations', 'apikeys'] as const).map((plural) => {
        const items = [...live.items[plural].values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
        return (
          <section key={plural} aria-labelledby={`h-${plural}`}>
            <div class="section-head">
              <h2 id={`h-${plural}`}>
                {LABEL_OF[plural] === 'Integration' ? 'Integrations' : 'API keys'}{' '}
                {live.loaded[plural] && <span class="count">{items.length}</span>}
              </h2>
              <a class="button" href={href('ns', ns, 'new', plural)}>
                New {plural === 'apikeys' ? 'API key' : 'integration'}
              </a>
            </div>
            {live.failures[plural] ? (
              <p class="error" role="alert">
                {live.failures[plural]}
              </p>
            ) : !live.loaded[plural] ? (
              <p class="loading">Loading…</p>
            ) : (
              <Table ns={ns} plural={plural} items={items} now={now} />
            )}
          </section>
        );
      })}
    </main>
  );
}
