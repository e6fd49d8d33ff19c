/**
 * The event inspector on an integration's page (docs/inspector.md): its captured requests, newest
 * first, and the one picked in full (captured-request.tsx). The server asks the API server whether
 * the user may `inspect` the integration before it reads anything; a user who may not gets its
 * message and no payload.
 */
import { useEffect, useState } from 'preact/hooks';
import type { CapturedRequestSummary } from '../../../api/inspector.js';
import { inertText } from '../../../common/sender-text.js';
import { ApiError } from '../data/api.js';
import { listCaptured } from '../data/inspector.js';
import type { Resource } from '../data/resources.js';
import { CapturedRequestView } from './captured-request.js';
import { ErrorText } from './error-text.js';

export function Inspector({ ns, r }: { ns: string; r: Resource }) {
  const name = r.metadata.name;
  const enabled = (r.spec?.inspect as { enabled?: boolean } | undefined)?.enabled === true;
  const [requests, setRequests] = useState<CapturedRequestSummary[] | undefined>();
  const [error, setError] = useState<{ status: number; message: string } | undefined>();
  const [selected, setSelected] = useState<string | undefined>();
  // Bumped by Refresh: the open request is read again (its delivery attempts come in later).
  const [version, setVersion] = useState(0);
  const load = () =>
    listCaptured(ns, name).then(
      (res) => {
        setError(undefined);
        setRequests(res.requests);
      },
      (e: Error) => setError({ status: e instanceof ApiError ? e.status : 0, message: e.message }),
    );
  useEffect(() => {
    if (enabled) void load();
  }, [ns, name, enabled]);
  if (!enabled) return null;
  const refresh = () => {
    setVersion((v) => v + 1);
    void load();
  };
  return (
    <section aria-labelledby="h-inspector">
      <h2 id="h-inspector">Captured requests</h2>
      <p class="hint">
        The integration's last requests that proved their credentials (spec.inspect), with what intake made of them.
      </p>
      <div class="actions">
        <button type="button" class="secondary" onClick={refresh}>
          Refresh
        </button>
      </div>
      <ErrorText message={error?.message} class={error?.status === 403 ? 'forbidden' : undefined} />
      {requests && requests.length === 0 && <p class="muted">Nothing captured yet.</p>}
      {requests && requests.length > 0 && (
        <table class="captured">
          <thead>
            <tr>
              <th>Received</th>
              <th>From</th>
              <th>Status</th>
              <th>Events</th>
              <th>Body</th>
            </tr>
          </thead>
          <tbody>
            {requests.map((q) => (
              <tr key={q.id} data-id={q.id} class={q.id === selected ? 'selected' : ''}>
                <td>
                  <button type="button" class="link" onClick={() => setSelected(q.id)}>
                    {inertText(q.receivedAt)}
                  </button>
                </td>
                <td>{inertText(q.remoteAddress)}</td>
                <td>
                  {q.status}
                  {q.refusal ? ` ${inertText(q.refusal.code)}` : ''}
                </td>
                <td>{q.eventCount}</td>
                <td>
                  {q.bodyBytes} bytes{q.bodyTruncated ? ' (cut)' : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {selected && <CapturedRequestView ns={ns} name={name} id={selected} version={version} />}
    </section>
  );
}
