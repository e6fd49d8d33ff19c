/**
 * One captured request in full: headers (credentials, signatures and cookies removed), the body,
 * the events it became, where each went, and each delivery attempt; "Open in playground" and
 * "Replay event n".
 */
import { useEffect, useState } from 'preact/hooks';
import type { CapturedRequest } from '../../../api/inspector.js';
import { inertText } from '../../../common/sender-text.js';
import { readCaptured, replayCaptured } from '../data/inspector.js';
import { ErrorText } from './error-text.js';
import { HttpStatus } from './http-status.js';
import { OPEN_IN_PLAYGROUND } from './playground.js';
import { routingText } from './routing.js';

/** `version` changes when the user asks to read it again (its delivery attempts come in later). */
export function CapturedRequestView(props: { ns: string; name: string; id: string; version: number }) {
  const { ns, name, id } = props;
  const [request, setRequest] = useState<CapturedRequest | undefined>();
  const [error, setError] = useState('');
  const [notice, setNotice] = useState('');
  useEffect(() => {
    setRequest(undefined);
    readCaptured(ns, name, id).then(setRequest, (e: Error) => setError(e.message));
  }, [ns, name, id, props.version]);
  if (error) return <ErrorText message={error} />;
  if (!request) return <p class="loading">Loading…</p>;
  const replay = async (event: number) => {
    setNotice('');
    try {
      const res = await replayCaptured(ns, name, id, event);
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
        {inertText(request.receivedAt)} from {inertText(request.remoteAddress)}: <HttpStatus status={request.status} />
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
            {request.routing?.[i] && <span>{routingText(request.routing[i])}</span>}{' '}
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
