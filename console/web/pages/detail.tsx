/**
 * One integration or API key: where to send and with what (the secret revealed only when the
 * user's own token may read the Secret), rotate, suspend, conditions, activity, a test event with
 * "copy as curl", and for a mapped integration the mapping playground.
 */
import { useEffect, useState } from 'preact/hooks';
import { inertText } from '../../../common/sender-text.js';
import { api, LABEL_OF, resourcePath, type Plural, type Resource } from '../data/api.js';
import { GitOpsBadge, ReadyBadge, useTick } from './list.js';
import { age, gitOpsOwner, href, isSuspended } from '../data/model.js';
import { Inspector, OPEN_IN_PLAYGROUND } from '../components/inspector.js';
import { MinuteChart } from '../components/minute-chart.js';
import { sampleFor } from '../samples.js';

type Mode = 'basic' | 'signature' | 'basic+signature';

/** What the console server reveals (console/server/actions.ts). */
interface Credentials {
  mode: Mode;
  username: string;
  secret: string;
  authorization: string;
  secretName: string;
  signature?: { scheme: string; signingSecret: string; secretName: string; key: string };
}

/** spec.authentication: how the integration's senders authenticate (docs/signatures.md). */
const authenticationOf = (plural: Plural, r: Resource): { mode: Mode; scheme?: string } => {
  if (plural === 'apikeys') return { mode: 'basic' };
  const auth = r.spec?.authentication as { mode?: Mode; signature?: { scheme?: string } } | undefined;
  return { mode: auth?.mode ?? 'basic', ...(auth?.signature?.scheme ? { scheme: auth.signature.scheme } : {}) };
};

const MASK = '••••••••••••';

function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="small"
      aria-label={label}
      onClick={async () => {
        await navigator.clipboard?.writeText(text);
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }}
    >
      {done ? 'Copied' : 'Copy'}
    </button>
  );
}

function Connection({ ns, plural, r }: { ns: string; plural: Plural; r: Resource }) {
  const [creds, setCreds] = useState<Credentials | undefined>();
  const [shown, setShown] = useState(false);
  const [error, setError] = useState('');
  const { mode, scheme } = authenticationOf(plural, r);
  const basic = mode !== 'signature';
  const signed = mode !== 'basic';
  const username =
    r.status?.username ??
    (r.spec?.credentials as { username?: string } | undefined)?.username ??
    r.status?.integrationName ??
    r.metadata.name;
  const reveal = async () => {
    setError('');
    try {
      setCreds(await api<Credentials>('GET', `${resourcePath(ns, plural, r.metadata.name)}/credentials`));
      setShown(true);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const secretLabel = plural === 'apikeys' ? 'API key' : 'Password';
  /** A secret masked until revealed; Reveal and Hide act on every secret of the page. */
  const secretRow = (label: string, cls: string, value: string | undefined) => (
    <>
      <dt>{label}</dt>
      <dd>
        <code class={cls}>{shown && value !== undefined ? value : MASK}</code>{' '}
        {shown && value !== undefined ? (
          <>
            <CopyButton text={value} label={`Copy ${label.toLowerCase()}`} />{' '}
            <button type="button" class="small" onClick={() => setShown(false)}>
              Hide
            </button>
          </>
        ) : (
          <button type="button" class="small" onClick={reveal}>
            Reveal
          </button>
        )}
      </dd>
    </>
  );
  const from = [
    ...(basic && creds ? [creds.secretName] : []),
    ...(creds?.signature ? [`${creds.signature.secretName} (key ${creds.signature.key})`] : []),
  ].filter((v, i, all) => all.indexOf(v) === i);
  return (
    <section aria-labelledby="h-connection">
      <h2 id="h-connection">Connection</h2>
      <dl class="kv">
        <dt>URL</dt>
        <dd>
          {r.status?.url ? (
            <>
              <code class="url-value">{r.status.url}</code> <CopyButton text={r.status.url} label="Copy URL" />
            </>
          ) : (
            <span class="muted">not published yet</span>
          )}
        </dd>
        {signed && (
          <>
            <dt>Signature</dt>
            <dd class="signature-scheme">
              {scheme ?? 'not configured'}{' '}
              <span class="muted">
                (
                {mode === 'signature'
                  ? 'the sender signs; no password'
                  : 'the sender signs and sends Basic credentials'}
                )
              </span>
            </dd>
          </>
        )}
        {basic && (
          <>
            <dt>Username</dt>
            <dd>
              <code class="username-value">{creds?.username ?? username}</code>{' '}
              <CopyButton text={creds?.username ?? username} label="Copy username" />
            </dd>
          </>
        )}
        {basic && secretRow(secretLabel, 'secret-value', creds?.secret)}
        {signed && secretRow('Signing secret', 'signing-secret-value', creds?.signature?.signingSecret)}
      </dl>
      {from.length > 0 && <p class="hint">From the Secret {from.join(' and ')}.</p>}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

function Conditions({ r }: { r: Resource }) {
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
              <tr key={c.type}>
                <th scope="row">{c.type}</th>
                <td>{c.status}</td>
                <td>{c.reason}</td>
                <td class="message">{inertText(c.message)}</td>
                <td>{age(c.lastTransitionTime)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function ActivityView({ r }: { r: Resource }) {
  const now = useTick(5000);
  const a = r.status?.activity;
  return (
    <section aria-labelledby="h-activity">
      <h2 id="h-activity">Activity</h2>
      {!a ? (
        <p class="muted">No activity reported yet (the operator writes status.activity from what the ingesters saw).</p>
      ) : (
        <>
          <figure class="activity-chart">
            <MinuteChart minutes={a.minutes} now={now} width={480} height={96} detailed />
            <div class="chart-axis" style={{ width: '480px' }}>
              <span>60 min ago</span>
              <span>now</span>
            </div>
            <figcaption class="muted">
              Per minute over the last hour, newest on the right: events accepted above the line, requests refused
              below.
            </figcaption>
          </figure>
          <dl class="kv activity">
            <dt>Last event</dt>
            <dd class="last-event">
              {a.lastEventTime ? `${age(a.lastEventTime, now)} (${a.lastEventTime})` : 'never'}
            </dd>
            <dt>Events, last hour</dt>
            <dd class="events-1h">
              {a.eventsLastHour ?? 0}
              {(a.droppedByRuleLastHour ?? 0) > 0 && (
                <span class="muted"> (dropped by routing rules: {a.droppedByRuleLastHour})</span>
              )}
            </dd>
            <dt>Refused, last hour</dt>
            <dd class="refused-1h">
              {a.refusedLastHour ?? 0}
              {a.refusalsLastHour && Object.keys(a.refusalsLastHour).length > 0 && (
                <span class="muted">
                  {' '}
                  (
                  {Object.entries(a.refusalsLastHour)
                    .map(([reason, n]) => `${reason}: ${n}`)
                    .join(', ')}
                  )
                </span>
              )}
            </dd>
            <dt>Last refusal</dt>
            <dd>{a.lastRefusalTime ? age(a.lastRefusalTime, now) : 'never'}</dd>
          </dl>
          <h3>Recent refusals</h3>
          <p class="muted">Requests that proved their credentials. The User-Agent is what the sender claimed.</p>
          {(a.recentRefusals ?? []).length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <table class="refusals">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Status</th>
                  <th scope="col">Reason</th>
                  <th scope="col">Message</th>
                  <th scope="col">Sender</th>
                  <th scope="col">User-Agent (as sent)</th>
                  <th scope="col">Dead letter</th>
                </tr>
              </thead>
              <tbody>
                {(a.recentRefusals ?? []).map((f, i) => (
                  <tr key={`${f.time}-${i}`}>
                    <td title={f.time}>{age(f.time, now)}</td>
                    <td>{f.status}</td>
                    <td class="reason">{inertText(f.reason)}</td>
                    <td class="message">
                      {f.code ? `${inertText(f.code)}: ` : ''}
                      {inertText(f.message)}
                    </td>
                    <td class="sender">{inertText(f.remoteAddress)}</td>
                    <td class="user-agent">{f.userAgent ? `“${inertText(f.userAgent)}”` : ''}</td>
                    <td>{f.deadLetterId ? <code>{inertText(f.deadLetterId)}</code> : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {(a.unauthenticatedSenders ?? []).length > 0 && (
            <>
              <h3>Refused before authentication</h3>
              <p class="muted">
                Senders that proved no credentials (a wrong password or signature, a blocked address). Anyone can send
                these, so only the address and a count are kept.
              </p>
              <table class="unauthenticated">
                <thead>
                  <tr>
                    <th scope="col">Last</th>
                    <th scope="col">Status</th>
                    <th scope="col">Reason</th>
                    <th scope="col">Address</th>
                    <th scope="col">Count</th>
                    <th scope="col">Since</th>
                  </tr>
                </thead>
                <tbody>
                  {(a.unauthenticatedSenders ?? []).map((s, i) => (
                    <tr key={`${s.remoteAddress}-${s.reason}-${i}`}>
                      <td title={s.lastTime}>{age(s.lastTime, now)}</td>
                      <td>{s.status}</td>
                      <td class="reason">{inertText(s.reason)}</td>
                      <td class="sender">{inertText(s.remoteAddress)}</td>
                      <td>{s.count}</td>
                      <td title={s.firstTime}>{age(s.firstTime, now)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
        </>
      )}
    </section>
  );
}

interface SendResult {
  url: string;
  status: number;
  body: string;
  durationMs: number;
}

const pretty = (text: string): string => {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
};

function TestEvent({ ns, r }: { ns: string; r: Resource }) {
  const preset = (r.spec?.mapping as { preset?: string } | undefined)?.preset;
  const [payload, setPayload] = useState(() => JSON.stringify(sampleFor(preset), null, 2));
  const [result, setResult] = useState<SendResult | undefined>();
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [curl, setCurl] = useState('');
  const [curlNote, setCurlNote] = useState('');
  const { mode } = authenticationOf('webhookintegrations', r);
  const send = async () => {
    setError('');
    setResult(undefined);
    setBusy(true);
    try {
      setResult(
        await api<SendResult>('POST', `${resourcePath(ns, 'webhookintegrations', r.metadata.name)}/send`, { payload }),
      );
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const showCurl = async () => {
    setError('');
    setCurlNote('');
    const res = await api<{ command: string; note?: string }>(
      'POST',
      `${resourcePath(ns, 'webhookintegrations', r.metadata.name)}/curl`,
      { payload: JSON.stringify(JSON.parse(payload)) },
    );
    setCurl(res.command);
    setCurlNote(res.note ?? '');
  };
  return (
    <section aria-labelledby="h-test">
      <h2 id="h-test">Send a test event</h2>
      <p class="hint">
        {preset ? `The ${preset} preset's sample notification` : 'An event in intake’s own format'}; edit it as you
        like. The console sends it to the integration’s URL{' '}
        {mode === 'basic'
          ? 'with its credentials'
          : mode === 'signature'
            ? 'signed with its signing secret'
            : 'with its credentials, signed with its signing secret'}
        , as the sender would.
      </p>
      <label for="test-payload">Payload (JSON)</label>
      <textarea
        id="test-payload"
        class="code"
        rows={10}
        spellcheck={false}
        value={payload}
        onInput={(e) => setPayload(e.currentTarget.value)}
      />
      <div class="actions">
        <button type="button" onClick={send} disabled={busy || !r.status?.url}>
          Send
        </button>
        <button type="button" class="secondary" onClick={() => showCurl().catch((e: Error) => setError(e.message))}>
          Copy as curl
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {result && (
        <div class="answer" role="status">
          <p>
            Answer: <strong class={`http-status s${Math.floor(result.status / 100)}xx`}>{result.status}</strong>{' '}
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
          <textarea id="curl-command" class="code" rows={curl.split('\n').length + 1} readOnly value={curl} />
          {curlNote && <p class="hint curl-note">{curlNote}</p>}
          <CopyButton text={curl} label="Copy the curl command" />
        </div>
      )}
    </section>
  );
}

interface TestResult {
  index: number;
  /** passed, failed, timed out, not run (a test after one that timed out). */
  outcome: string;
  passed: boolean;
  message: string;
}

/** Where one event of a dry run would go (ingester/mapping/mapped-webhooks.ts EventRouting). */
interface EventRouting {
  matched: string[];
  destinations: string[];
  droppedBy?: string;
}

/** Per event of a dry run: the routing rules it matched and where it would be delivered. */
function RoutingList({ routing }: { routing: EventRouting[] }) {
  return (
    <ol class="routing" start={0} aria-label="Where each event would go">
      {routing.map((e, i) => (
        <li key={i}>
          event {i}:{' '}
          {e.droppedBy !== undefined
            ? `dropped by rule ${inertText(e.droppedBy)}`
            : e.matched.length > 0
              ? `rule ${e.matched.map((m) => inertText(m)).join(', ')}`
              : 'no rule matched'}
          {e.droppedBy === undefined || e.destinations.length > 0
            ? ` → ${e.destinations.length > 0 ? e.destinations.map((d) => inertText(d)).join(', ') : 'no destination'}`
            : ''}
        </li>
      ))}
    </ol>
  );
}

function Playground({ ns, r }: { ns: string; r: Resource }) {
  const mapping = r.spec?.mapping as { preset?: string; expression?: string; tests?: unknown[] } | undefined;
  const [payload, setPayload] = useState(() => JSON.stringify(sampleFor(mapping?.preset), null, 2));
  const [mapped, setMapped] = useState<{ status: number; body: unknown } | undefined>();
  const [tests, setTests] = useState<TestResult[] | undefined>();
  const [testing, setTesting] = useState(false);
  const [error, setError] = useState('');
  const rules = (r.spec?.rules as unknown[] | undefined) ?? [];
  // A captured request's body, from the inspector's "Open in playground".
  useEffect(() => {
    const open = (e: Event) => {
      setPayload((e as CustomEvent<string>).detail);
      setMapped(undefined);
      document.getElementById('h-playground')?.scrollIntoView();
    };
    window.addEventListener(OPEN_IN_PLAYGROUND, open);
    return () => window.removeEventListener(OPEN_IN_PLAYGROUND, open);
  }, []);
  // Without a mapping the playground is still where routing rules are tried, on a plain event.
  if (!mapping && rules.length === 0) return null;
  const dryRun = async () => {
    setError('');
    try {
      const res = await api<SendResult>('POST', `${resourcePath(ns, 'webhookintegrations', r.metadata.name)}/send`, {
        payload,
        dryRun: true,
      });
      let body: unknown = res.body;
      try {
        body = JSON.parse(res.body);
      } catch {
        // not JSON: shown as text
      }
      setMapped({ status: res.status, body });
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const runTests = async () => {
    setError('');
    setTesting(true);
    try {
      const res = await api<{ results: TestResult[] }>(
        'POST',
        `${resourcePath(ns, 'webhookintegrations', r.metadata.name)}/mapping-tests`,
        {},
      );
      setTests(res.results);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setTesting(false);
    }
  };
  const body = mapped?.body as
    { events?: unknown[]; routing?: EventRouting[]; message?: string; mapping?: string } | undefined;
  return (
    <section aria-labelledby="h-playground">
      <h2 id="h-playground">Mapping playground</h2>
      <p class="hint">
        Mapping: {mapping ? (mapping.preset ? `preset ${mapping.preset}` : 'a JSONata expression') : 'none'}
        {rules.length > 0 ? `; ${rules.length} routing rule(s)` : ''}. “Map” asks the ingester what this payload maps to
        and, per event, which routing rule matched and where it would go (a dry run: nothing is accepted, counted or
        delivered).
      </p>
      <label for="playground-payload">Payload (JSON)</label>
      <textarea
        id="playground-payload"
        class="code"
        rows={10}
        spellcheck={false}
        value={payload}
        onInput={(e) => setPayload(e.currentTarget.value)}
      />
      <div class="actions">
        <button type="button" onClick={dryRun}>
          Map
        </button>
        <button type="button" class="secondary" onClick={runTests} disabled={!mapping?.tests?.length || testing}>
          {testing ? 'Running spec.mapping.tests…' : `Run spec.mapping.tests (${mapping?.tests?.length ?? 0})`}
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {mapped && (
        <div class="mapped" role="status">
          <p>
            <strong class={`http-status s${Math.floor(mapped.status / 100)}xx`}>{mapped.status}</strong>{' '}
            {body?.message ?? ''}
          </p>
          {body?.events && (
            <>
              <h3>{body.events.length} event(s)</h3>
              {body.routing && <RoutingList routing={body.routing} />}
              <pre class="code mapped-events">{JSON.stringify(body.events, null, 2)}</pre>
            </>
          )}
          {!body?.events && <pre class="code">{JSON.stringify(mapped.body, null, 2)}</pre>}
        </div>
      )}
      {tests && (
        <ul class="test-results">
          {tests.map((t) => (
            <li key={t.index} class={t.passed ? 'pass' : 'fail'}>
              {t.index >= 0 ? `tests[${t.index}]` : 'mapping'}:{' '}
              {t.passed
                ? 'passed'
                : t.outcome === 'not run'
                  ? inertText(t.message)
                  : `${t.outcome ?? 'failed'}: ${inertText(t.message)}`}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Actions({ ns, plural, r }: { ns: string; plural: Plural; r: Resource }) {
  const [error, setError] = useState('');
  const [confirming, setConfirming] = useState(false);
  const [notice, setNotice] = useState('');
  const owner = gitOpsOwner(r);
  const path = resourcePath(ns, plural, r.metadata.name);
  // What a rotation renews: the generated password (or key) and, for a signed integration, the
  // generated signing secret; a secret from the user's own Secret (secretRef) is rotated there.
  const { mode } = authenticationOf(plural, r);
  const signature = (r.spec?.authentication as { signature?: { secretRef?: unknown; rotationGracePeriod?: string } })
    ?.signature;
  const passwordWord = plural === 'apikeys' ? 'key' : 'password';
  const rotatable = [
    ...(mode !== 'signature' && !(r.spec?.credentials as { secretRef?: unknown } | undefined)?.secretRef
      ? [passwordWord]
      : []),
    ...(mode !== 'basic' && !signature?.secretRef ? ['signing secret'] : []),
  ];
  const userSecret = rotatable.length === 0;
  const grace =
    mode === 'signature'
      ? signature?.rotationGracePeriod
      : plural === 'apikeys'
        ? (r.spec?.rotationGracePeriod as string | undefined)
        : (r.spec?.credentials as { rotationGracePeriod?: string } | undefined)?.rotationGracePeriod;
  const graceWord = mode === 'signature' ? 'signing secret' : passwordWord;
  const run = async (what: () => Promise<unknown>, done: string) => {
    setError('');
    setNotice('');
    try {
      await what();
      setNotice(done);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const disabled = !!owner;
  return (
    <section aria-labelledby="h-actions">
      <h2 id="h-actions" class="visually-hidden">
        Actions
      </h2>
      {owner && (
        <p class="notice" role="status">
          Managed by {owner.tool} ({owner.owner}): change it in Git. Editing, rotating, suspending and deleting are off
          here, since the next sync would undo them.
        </p>
      )}
      <div class="actions">
        {disabled ? (
          <button type="button" disabled>
            Edit
          </button>
        ) : (
          <a class="button" href={href('ns', ns, plural, r.metadata.name, 'edit')}>
            Edit
          </a>
        )}
        <button
          type="button"
          disabled={disabled || userSecret}
          title={
            userSecret
              ? 'the secrets come from your own Secret (spec.credentials.secretRef, spec.authentication.signature.secretRef): rotate them there'
              : ''
          }
          onClick={() =>
            run(
              () =>
                api('PATCH', path, { metadata: { annotations: { 'intake.dev/rotate': new Date().toISOString() } } }),
              'Rotation requested: the operator writes a new secret to the credentials Secret.',
            )
          }
        >
          Rotate {rotatable.length > 0 ? rotatable.join(' and ') : passwordWord}
        </button>
        <button
          type="button"
          disabled={disabled}
          onClick={() =>
            run(
              () => api('PATCH', path, { spec: { suspend: isSuspended(r) ? null : true } }),
              isSuspended(r) ? 'Resumed.' : 'Suspended: requests are refused until resumed.',
            )
          }
        >
          {isSuspended(r) ? 'Resume' : 'Suspend'}
        </button>
        {confirming ? (
          <>
            <button
              type="button"
              class="danger"
              onClick={() =>
                run(async () => {
                  await api('DELETE', path);
                  location.hash = href('ns', ns);
                }, 'Deleted.')
              }
            >
              Really delete {r.metadata.name}
            </button>
            <button type="button" class="secondary" onClick={() => setConfirming(false)}>
              Keep it
            </button>
          </>
        ) : (
          <button type="button" class="danger" disabled={disabled} onClick={() => setConfirming(true)}>
            Delete
          </button>
        )}
      </div>
      <p class="hint rotation">
        Rotation grace period:{' '}
        {grace && !/^0+[a-z]*$/.test(grace)
          ? `${grace} (the previous ${graceWord} keeps working that long after a rotation)`
          : 'none (the previous one stops working at once; set one in Edit)'}
        .
      </p>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

export function Detail(props: { ns: string; plural: Plural; name: string; resource?: Resource; loaded: boolean }) {
  const { ns, plural, name } = props;
  const [fetched, setFetched] = useState<Resource | undefined>();
  const [error, setError] = useState('');
  // The live list has it once loaded; until then (or if listing is forbidden) read it directly.
  useEffect(() => {
    if (!props.resource)
      api<Resource>('GET', resourcePath(ns, plural, name)).then(setFetched, (e: Error) => setError(e.message));
  }, [ns, plural, name, props.loaded]);
  const r = props.resource ?? fetched;
  return (
    <main>
      <p class="crumbs">
        <a href={href('ns', ns)}>{ns}</a> / {LABEL_OF[plural].toLowerCase()}s / {name}
      </p>
      <h1>
        {name} {r && <ReadyBadge resource={r} />} {r && <GitOpsBadge resource={r} />}
        {r && isSuspended(r) && <span class="badge warn">Suspended</span>}
      </h1>
      {!r ? (
        error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : props.loaded ? (
          <p class="muted">{name} does not exist (any more).</p>
        ) : (
          <p class="loading">Loading…</p>
        )
      ) : (
        <>
          <Actions ns={ns} plural={plural} r={r} />
          <Connection ns={ns} plural={plural} r={r} />
          <Conditions r={r} />
          <ActivityView r={r} />
          {plural === 'webhookintegrations' && <TestEvent ns={ns} r={r} />}
          {plural === 'webhookintegrations' && <Inspector ns={ns} r={r} />}
          {plural === 'webhookintegrations' && <Playground ns={ns} r={r} />}
        </>
      )}
    </main>
  );
}
