/**
 * One destination's dead letters in a namespace, and the filtered bulk replay: filters
 * (integration, reason, time range), the letters they select, "Replay matching" with a pace, the
 * replays' progress (read again every second while one runs) and Cancel. The console server asks
 * the API server whether the user may `replay` before it starts or cancels anything; a user who may
 * not sees the letters and why the buttons are off.
 */
import { useEffect, useState } from 'preact/hooks';
import { inertText } from '../../../common/sender-text.js';
import {
  cancelReplay,
  listDeadLetters,
  listReplays,
  startReplay,
  type DeadLetters as Letters,
  type DestinationScope,
  type ReplayFilter,
  type ReplayProgress,
} from '../data/destinations.js';

/** A datetime-local input's value (the browser's time zone) as RFC 3339; empty stays empty. */
const rfc3339 = (local: string): string | undefined => {
  if (!local) return undefined;
  const ms = Date.parse(local);
  return Number.isNaN(ms) ? local : new Date(ms).toISOString();
};

function Progress({ r, onCancel, mayCancel }: { r: ReplayProgress; onCancel: () => void; mayCancel: boolean }) {
  const done = r.replayed + r.failed + r.skipped;
  return (
    <li class={`replay ${r.state}`} data-id={r.id} data-state={r.state}>
      <progress max={Math.max(1, r.matched)} value={done} /> <strong>{r.state}</strong>: {r.replayed} replayed,{' '}
      {r.failed} failed, {r.skipped} skipped, {r.remaining} remaining of {r.matched}
      {r.rate ? ` at ${r.rate}/s` : ''}, started {inertText(r.startedAt)}
      {r.message ? ` (${inertText(r.message)})` : ''}{' '}
      {r.state === 'running' && (
        <button type="button" class="secondary small" onClick={onCancel} disabled={!mayCancel}>
          Cancel
        </button>
      )}
      {r.failures.length > 0 && (
        <ul class="failures">
          {r.failures.map((f) => (
            <li key={f.id}>
              {inertText(f.id)}: {inertText(f.message, 256)}
            </li>
          ))}
        </ul>
      )}
    </li>
  );
}

export function DeadLetters({ ns, scope, name }: { ns: string; scope: DestinationScope; name: string }) {
  const [form, setForm] = useState({ integration: '', reason: '', since: '', until: '', rate: '' });
  const [applied, setApplied] = useState<ReplayFilter>({});
  const [letters, setLetters] = useState<Letters | undefined>();
  const [replays, setReplays] = useState<ReplayProgress[]>([]);
  const [error, setError] = useState('');
  const [version, setVersion] = useState(0);
  const filterOf = (): ReplayFilter => ({
    ...(form.integration ? { integration: form.integration.trim() } : {}),
    ...(form.reason ? { reason: form.reason.trim() } : {}),
    ...(form.since ? { since: rfc3339(form.since) } : {}),
    ...(form.until ? { until: rfc3339(form.until) } : {}),
  });
  useEffect(() => {
    listDeadLetters(ns, scope, name, applied).then(
      (l) => (setError(''), setLetters(l)),
      (e: Error) => setError(e.message),
    );
    listReplays(ns, scope, name).then(
      (r) => setReplays(r.replays),
      () => undefined,
    );
  }, [ns, scope, name, applied, version]);
  const running = replays.some((r) => r.state === 'running');
  // While a replay runs its progress is read again each second; the letters once it ends.
  useEffect(() => {
    if (!running) return;
    const t = setInterval(
      () =>
        listReplays(ns, scope, name).then(
          (r) => {
            setReplays(r.replays);
            if (!r.replays.some((p) => p.state === 'running')) setVersion((v) => v + 1);
          },
          () => undefined,
        ),
      1000,
    );
    return () => clearInterval(t);
  }, [running, ns, scope, name]);

  const show = (e: Event) => {
    e.preventDefault();
    setApplied(filterOf());
  };
  const replay = async () => {
    setError('');
    const rate = Number(form.rate);
    try {
      const started = await startReplay(ns, scope, name, {
        ...filterOf(),
        ...(form.rate && Number.isFinite(rate) ? { rate } : {}),
      });
      setReplays((rs) => [started, ...rs.filter((r) => r.id !== started.id)]);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const cancel = async (id: string) => {
    try {
      const stopped = await cancelReplay(ns, scope, name, id);
      setReplays((rs) => rs.map((r) => (r.id === id ? stopped : r)));
      setVersion((v) => v + 1);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const field = (key: keyof typeof form) => ({
    value: form[key],
    onInput: (e: Event) => setForm({ ...form, [key]: (e.currentTarget as HTMLInputElement).value }),
  });
  const integrations = [...new Set((letters?.entries ?? []).map((l) => l.integration))].sort();
  const newestFirst = [...replays].sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  return (
    <section aria-labelledby="h-dead-letters" class="dead-letters">
      <h2 id="h-dead-letters">Dead letters {letters && <span class="count">{letters.count}</span>}</h2>
      <p class="hint">
        Events of this namespace the receiver refused or ran out of attempts for. A replay hands each selected one back
        to this destination once (they leave the list as they are delivered again).
      </p>
      <form class="replay-filters" onSubmit={show}>
        <label>
          Integration <input name="integration" list="dl-integrations" {...field('integration')} />
        </label>
        <datalist id="dl-integrations">
          {integrations.map((i) => (
            <option key={i} value={i} />
          ))}
        </datalist>
        <label>
          Reason <input name="reason" placeholder="http_5*" {...field('reason')} />
        </label>
        <label>
          Since <input name="since" type="datetime-local" step="1" {...field('since')} />
        </label>
        <label>
          Until <input name="until" type="datetime-local" step="1" {...field('until')} />
        </label>
        <label>
          Rate (/s) <input name="rate" type="number" min="0" placeholder="as fast as delivered" {...field('rate')} />
        </label>
        <div class="actions">
          <button type="submit" class="secondary">
            Show
          </button>
          <button type="button" onClick={replay} disabled={!letters?.mayReplay || running}>
            Replay matching
          </button>
        </div>
      </form>
      {letters && !letters.mayReplay && (
        <p class="muted forbidden">
          Replaying needs the verb <code>replay</code> on destinations in {ns} (the edit role holds it).
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {newestFirst.length > 0 && (
        <ul class="replays" aria-label="Replays">
          {newestFirst.map((r) => (
            <Progress key={r.id} r={r} onCancel={() => void cancel(r.id)} mayCancel={letters?.mayReplay === true} />
          ))}
        </ul>
      )}
      {letters && letters.entries.length === 0 && <p class="empty">None match.</p>}
      {letters && letters.entries.length > 0 && (
        <table class="letters">
          <thead>
            <tr>
              <th scope="col">Kept</th>
              <th scope="col">Integration</th>
              <th scope="col">Reason</th>
              <th scope="col">Receiver's answer</th>
              <th scope="col">Attempts</th>
            </tr>
          </thead>
          <tbody>
            {letters.entries.map((l) => (
              <tr key={l.id} data-id={l.id}>
                <td>{inertText(l.at)}</td>
                <td>{inertText(l.integration)}</td>
                <td>{inertText(l.reason)}</td>
                <td class="message">{inertText(l.error ?? '', 256)}</td>
                <td>{l.attempts ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {letters && letters.count >= letters.limit && (
        <p class="hint">The first {letters.limit} shown; a replay takes every letter its filters select.</p>
      )}
    </section>
  );
}
