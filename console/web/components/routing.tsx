/** Where events go: per event, the routing rules it matched and its destinations (a dry run's or a captured request's). */
import type { CapturedRouting } from '../../../api/inspector.js';
import { inertText } from '../../../common/sender-text.js';

const names = (list: readonly string[]) => list.map((n) => inertText(n)).join(', ');

/** One event's routing: "rule a, b → dest", "no rule matched → dest", "dropped by rule x". */
export function routingText(e: CapturedRouting): string {
  if (e.droppedBy !== undefined)
    return `dropped by rule ${inertText(e.droppedBy)}${e.destinations.length > 0 ? ` → ${names(e.destinations)}` : ''}`;
  const rules = e.matched.length > 0 ? `rule ${names(e.matched)}` : 'no rule matched';
  return `${rules} → ${e.destinations.length > 0 ? names(e.destinations) : 'no destination'}`;
}

/** Per event of a dry run: the routing rules it matched and where it would be delivered. */
export function RoutingList({ routing }: { routing: CapturedRouting[] }) {
  return (
    <ol class="routing" start={0} aria-label="Where each event would go">
      {routing.map((e, i) => (
        <li key={i}>
          event {i}: {routingText(e)}
        </li>
      ))}
    </ol>
  );
}
