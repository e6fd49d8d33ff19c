/**
 * The event inspector on an integration's page (docs/inspector.md): its captured requests, newest
 * first, and one request's detail (headers, body, the events it became, where each goes, delivery
 * attempts), with "Open in playground" and "Replay". The server asks the API server whether the
 * user may `inspect` the integration before it reads anything; a user who may not gets its
 * message and no payload.
 */
import { useEffect, useState } from 'preact/hooks';
import type { CapturedRequest, CapturedRequestSummary, CapturedRouting } from '../../../api/inspector.js';
import { inertText } from '../../../common/sender-text.js';
import { api, ApiError, resourcePath, type Resource } from '../data/api.js';

/** The playground (detail.tsx) listens for this to load a payload. */
export const OPEN_IN_PLAYGROUND = 'intake:open-in-playground';

const pathOf = (ns: string, r: Resource, rest = '') =>
  `${resourcePath(ns, 'webhookintegrations', r.metadata.name)}/inspector${rest}`;

function Routing({ routing }: { routing: CapturedRouting | undefined }) {
  if (!routing) return null;
  if (routing.droppedBy !== undefined) return <span>dropped by rule {inertText(routing.droppedBy)}</span>;
  const rules = routing.matched.length > 0 ? `rule ${routing.matched.map((m) => inertText(m)).join(', ')}` : 'no rule';
  const to = routing.destinations.length > 0 ? routing.destinations.map((d) => inertText(d)).join(', ') : 'nowhere';
  return (
    <span>
      {rules} → {to}
    </span>
  );
}

function RequestDetail({ ns, r, id, version }: { ns: string; r: Resource; id: string; version: number }) {
  const [request, setRequest] = useState<CapturedRequest | undefined>();
  const [error, setError] = useState('');
  const [notice, setNotice] = useState('');
  useEffect(() => {
    setRequest(undefined);
    api<CapturedRequest>('GET', pathOf(ns, r, `/${encodeURIComponent(id)}`)).then(setRequest, (e: Error) =>
      setError(e.message),
    );
  }, [ns, r.metadata.name, id, version]);
  if (error)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!request) return <p class="loading">Loading…</p>;
  const replay = async (event: number) => {
    setNotice('');
    try {
      const res = await api<{ id: string }>('POST', pathOf(ns, r, `/${encodeURIComponent(id)}/replay`), { event });
      setNotice(`event ${event} replayed as ${res.id}`);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const openInPlayground = () => {
    let payload = request.body;
    try {
      payload = JSON.stringify(JSON.parse(request.body), null, 2);
    } catch {
      // not JSON (or cut): as received
    }
    window.dispatchEvent(new CustomEvent(OPEN_IN_PLAYGROUND, { detail: payload }));
  };
  return (
    <div class="inspected" data-id={request.id}>
      <h3>
        {inertText(request.receivedAt)} from {inertText(request.remoteAddress)}:{' '}
        <strong class={`http-status s${Math.floor(request.status / 100)}xx`}>{request.status}</strong>
        {request.refusal && ` ${inertText(request.refusal.code)}: ${inertText(request.refusal.message)}`}
      </h3>
      <h4>Headers (credentials, signatures and cookies removed)</h4>
      <dl class="headers">
        {Object.entries(request.headers).map(([k, v]) => (
          <>
            <dt key={`k-${k}`}>{inertText(k)}</dt>
            <dd key={`v-${k}`}>{inertText(v)}</dd>
          </>
        ))}
      </dl>
      <h4>
        Body ({request.bodyBytes} bytes{request.bodyTruncated ? ', cut' : ''})
      </h4>
      <pre class="code captured-body">{request.body}</pre>
      <div class="actions">
        <button type="button" onClick={openInPlayground} disabled={request.bodyTruncated}>
          Open in playground
        </button>
      </div>
      <h4>
        {request.events?.length ?? 0} event(s){request.eventsTruncated ? ' (more left out)' : ''}
      </h4>
      <ol class="captured-events" start={0}>
        {(request.events ?? []).map((e, i) => (
          <li key={i}>
            <Routing routing={request.routing?.[i]} />{' '}
            <button type="button" class="secondary" onClick={() => replay(i)}>
              Replay event {i}
            </button>
            <pre class="code">{JSON.stringify(e, null, 2)}</pre>
            <ul class="attempts">
              {(request.attempts ?? [])
                .filter((a) => a.event === i)
                .map((a, j) => (
                  <li key={j}>
                    {inertText(a.at)} {inertText(a.destination)}: {a.status ?? 'no answer'}, {a.latencyMs} ms,{' '}
                    {a.outcome}
                    {a.error ? ` (${inertText(a.error)})` : ''}
                  </li>
                ))}
            </ul>
          </li>
        ))}
      </ol>
      {notice && <p role="status">{notice}</p>}
    </div>
  );
}

export function Inspector({ ns, r }: { ns: string; r: Resource }) {
  const enabled = (r.spec?.inspect as { enabled?: boolean } | undefined)?.enabled === true;
  const [requests, setRequests] = useState<CapturedRequestSummary[] | undefined>();
  const [error, setError] = useState<{ status: number; message: string } | undefined>();
  const [selected, setSelected] = useState<string | undefined>();
  // Bumped by Refresh: the open request is read again (its delivery attempts come in later).
  const [version, setVersion] = useState(0);
  const load = () =>
    api<{ requests: CapturedRequestSummary[] }>('GET', pathOf(ns, r)).then(
      (res) => (setError(undefined), setRequests(res.requests)),
      (e: Error) => setError({ status: e instanceof ApiError ? e.status : 0, message: e.message }),
    );
  useEffect(() => {
    if (enabled) void load();
  }, [ns, r.metadata.name, enabled]);
  if (!enabled) return null;
  return (
    <section aria-labelledby="h-inspector">
      <h2 id="h-inspector">Captured requests</h2>
      <p class="hint">
        The integration's last requests that proved their credentials (spec.inspect), with what intake made of them.
      </p>
      <div class="actions">
        <button type="button" class="secondary" onClick={() => (setVersion((v) => v + 1), void load())}>
          Refresh
        </button>
      </div>
      {error && (
        <p class={error.status === 403 ? 'error forbidden' : 'error'} role="alert">
          {error.message}
        </p>
      )}
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
      {selected && <RequestDetail ns={ns} r={r} id={selected} version={version} />}
    </section>
  );
}
