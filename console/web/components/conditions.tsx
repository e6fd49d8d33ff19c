/**
 * The object's status conditions as the operator reports them; `now` lets a page that ticks
 * (use-tick.ts) move the ages.
 */
import { inertText } from '../../../common/sender-text.js';
import { age } from '../data/model.js';
import type { Resource } from '../data/resources.js';

export function Conditions({ r, now }: { r: Resource; now?: number }) {
  const conditions = r.status?.conditions ?? [];
  return (
    <section aria-labelledby="h-conditions">
      <h2 id="h-conditions">Conditions</h2>
      {conditions.length === 0 ? (
        <p class="muted">The operator has not reported yet.</p>
      ) : (
        <table class="conditions">
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">Status</th>
              <th scope="col">Reason</th>
              <th scope="col">Message</th>
              <th scope="col">Since</th>
            </tr>
          </thead>
          <tbody>
            {conditions.map((c) => (
              <tr key={c.type} data-type={c.type}>
                <th scope="row">{c.type}</th>
                <td>{c.status}</td>
                <td>{inertText(c.reason)}</td>
                <td class="message">{inertText(c.message)}</td>
                <td>{age(c.lastTransitionTime, now)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
