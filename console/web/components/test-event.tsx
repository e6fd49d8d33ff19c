/**
 * "Send a test event": the preset's sample notification (or a plain event), edited at will, sent
 * to the integration's URL as its sender would; or given as a curl command that does the same.
 */
import { useState } from 'preact/hooks';
import { sampleFor } from '../../../api/mapping/preset-samples.js';
import type { SendResult } from '../../shared/console-api.js';
import { authenticationOf } from '../data/model.js';
import { curlFor, sendTestEvent } from '../data/playground.js';
import type { Resource } from '../data/resources.js';
import { CopyButton } from './copy-button.js';
import { ErrorText } from './error-text.js';
import { HttpStatus } from './http-status.js';
import { PayloadEditor } from './payload-editor.js';

const pretty = (text: string): string => {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
};

const HOW = {
  basic: 'with its credentials',
  signature: 'signed with its signing secret',
  'basic+signature': 'with its credentials, signed with its signing secret',
} as const;

export function TestEvent({ ns, r }: { ns: string; r: Resource }) {
  const preset = (r.spec?.mapping as { preset?: string } | undefined)?.preset;
  const [payload, setPayload] = useState(() => JSON.stringify(sampleFor(preset), null, 2));
  const [result, setResult] = useState<SendResult | undefined>();
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [curl, setCurl] = useState<{ command: string; note?: string } | undefined>();
  const { mode } = authenticationOf('webhookintegrations', r);
  const send = async () => {
    setError('');
    setResult(undefined);
    setBusy(true);
    try {
      setResult(await sendTestEvent(ns, r.metadata.name, payload));
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const showCurl = async () => {
    setError('');
    try {
      setCurl(await curlFor(ns, r.metadata.name, JSON.stringify(JSON.parse(payload))));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <section aria-labelledby="h-test">
      <h2 id="h-test">Send a test event</h2>
      <p class="hint">
        {preset ? `The ${preset} preset's sample notification` : 'An event in intake’s own format'}; edit it as you
        like. The console sends it to the integration’s URL {HOW[mode]}, as the sender would.
      </p>
      <PayloadEditor id="test-payload" value={payload} onInput={setPayload} />
      <div class="actions">
        <button type="button" onClick={send} disabled={busy || !r.status?.url}>
          Send
        </button>
        <button type="button" class="secondary" onClick={showCurl}>
          Copy as curl
        </button>
      </div>
      <ErrorText message={error} />
      {result && (
        <div class="answer" role="status">
          <p>
            Answer: <HttpStatus status={result.status} />{' '}
            <span class="muted">
              in {result.durationMs} ms from {result.url}
            </span>
          </p>
          <pre class="code">{pretty(result.body)}</pre>
        </div>
      )}
      {curl && (
        <div class="curl">
          <label for="curl-command">curl</label>
          <textarea
            id="curl-command"
            class="code"
            rows={curl.command.split('\n').length + 1}
            readOnly
            value={curl.command}
          />
          {curl.note && <p class="hint curl-note">{curl.note}</p>}
          <CopyButton text={curl.command} label="Copy the curl command" />
        </div>
      )}
    </section>
  );
}
