/**
 * The namespace's integrations and API keys, kept current by the server's Server-Sent Events
 * stream (Kubernetes watches made as the user): a snapshot per kind, then each change. The stream
 * is read with fetch rather than EventSource, which cannot send the session secret's header.
 */
import { useEffect, useState } from 'preact/hooks';
import { sessionHeaders } from './api.js';
import { PLURALS, type Plural, type Resource } from './resources.js';

export interface LiveState {
  items: Record<Plural, Map<string, Resource>>;
  /** Per kind: listed at least once. */
  loaded: Record<Plural, boolean>;
  /** Per kind: why it cannot be listed (the API server's message), if so. */
  failures: Partial<Record<Plural, string>>;
  connected: boolean;
  /** Why the console refused to follow this page (its per-user or global bound), if it did. */
  refused?: string;
}

const empty = (): LiveState => ({
  items: { webhookintegrations: new Map(), apikeys: new Map() },
  loaded: { webhookintegrations: false, apikeys: false },
  failures: {},
  connected: false,
});

/** Pause before following the stream again after it broke (EventSource waits about as long). */
const RECONNECT_MS = 3000;

type Listener = (data: string) => void;

/**
 * Follows a Server-Sent Events stream like EventSource: calls the event's listener with its data,
 * reconnects after the stream ends or breaks, and gives up on an answer other than 200 (a 503
 * when the console follows too many pages, a 401 without a session), as EventSource does.
 */
function followEvents(
  url: string,
  listeners: Record<string, Listener>,
  onState: (connected: boolean, refused?: string) => void,
): () => void {
  const abort = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const dispatch = (block: string) => {
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length > 0) listeners[event]?.(data.join('\n'));
  };
  const run = async () => {
    let res: Response;
    try {
      res = await fetch(url, { headers: sessionHeaders(), credentials: 'same-origin', signal: abort.signal });
    } catch {
      onState(false);
      if (!abort.signal.aborted) timer = setTimeout(() => void run(), RECONNECT_MS);
      return;
    }
    if (!res.ok || !res.body) {
      const answer = (await res.json().catch(() => undefined)) as { message?: string } | undefined;
      onState(false, res.status === 429 || res.status === 503 ? answer?.message : undefined);
      return;
    }
    onState(true);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        // Only the new text is searched for an event's end (a 1,000-item snapshot comes in many chunks).
        let from = Math.max(0, buffer.length - 1);
        buffer += value; // the console server ends lines with \n only
        for (let end = buffer.indexOf('\n\n', from); end >= 0; end = buffer.indexOf('\n\n', from)) {
          dispatch(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          from = 0;
        }
      }
    } catch {
      // broken off: followed again below
    }
    onState(false);
    if (!abort.signal.aborted) timer = setTimeout(() => void run(), RECONNECT_MS);
  };
  void run();
  return () => {
    abort.abort();
    clearTimeout(timer);
  };
}

export function useLive(namespace: string | undefined): LiveState {
  const [state, setState] = useState<LiveState>(empty);
  useEffect(() => {
    setState(empty());
    if (!namespace) return;
    return followEvents(
      `/api/namespaces/${encodeURIComponent(namespace)}/live`,
      {
        snapshot: (data) => {
          const { plural, items } = JSON.parse(data) as { plural: Plural; items: Resource[] };
          if (!PLURALS.includes(plural)) return;
          // For the 1,000-integration measurement: when the list arrived, before it is rendered.
          performance.mark(`intake:snapshot:${plural}`);
          setState((s) => {
            const failures = { ...s.failures };
            delete failures[plural];
            return {
              ...s,
              items: { ...s.items, [plural]: new Map(items.map((r) => [r.metadata.name, r])) },
              loaded: { ...s.loaded, [plural]: true },
              failures,
            };
          });
        },
        change: (data) => {
          const { plural, type, object } = JSON.parse(data) as { plural: Plural; type: string; object: Resource };
          if (!PLURALS.includes(plural)) return;
          setState((s) => {
            const next = new Map(s.items[plural]);
            if (type === 'DELETED') next.delete(object.metadata.name);
            else next.set(object.metadata.name, object);
            return { ...s, items: { ...s.items, [plural]: next } };
          });
        },
        failure: (data) => {
          const { plural, message } = JSON.parse(data) as { plural: Plural; message: string };
          setState((s) => ({
            ...s,
            failures: { ...s.failures, [plural]: message },
            loaded: { ...s.loaded, [plural]: true },
          }));
        },
      },
      (connected, refused) =>
        setState((s) => (s.connected === connected && s.refused === refused ? s : { ...s, connected, refused })),
    );
  }, [namespace]);
  return state;
}
