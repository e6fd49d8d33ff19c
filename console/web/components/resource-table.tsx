/** One kind's objects in a namespace: Name, Ready, URL, Last Event, Refused 1h and the last hour per minute. */
import { useLayoutEffect, useRef } from 'preact/hooks';
import { age, href } from '../data/model.js';
import type { Plural, Resource } from '../data/resources.js';
import { GitOpsBadge, ReadyBadge, SuspendedBadge } from './badges.js';
import { MinuteChart } from './minute-chart.js';

export function ResourceTable({
  ns,
  plural,
  items,
  now,
}: {
  ns: string;
  plural: Plural;
  items: Resource[];
  now: number;
}) {
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
                <SuspendedBadge resource={r} />
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
