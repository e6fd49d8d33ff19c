/**
 * The namespace's integrations and API keys, kept current by the server's Server-Sent Events
 * stream (Kubernetes watches made as the user): a snapshot per kind, then each change.
 */
import { useEffect, useState } from 'preact/hooks';
import { PLURALS, type Plural, type Resource } from './api.js';

export interface LiveState {
  items: Record<Plural, Map<string, Resource>>;
  /** Per kind: listed at least once. */
  loaded: Record<Plural, boolean>;
  /** Per kind: why it cannot be listed (the API server's message), if so. */
  failures: Partial<Record<Plural, string>>;
  connected: boolean;
}

const empty = (): LiveState => ({
  items: { webhookintegrations: new Map(), apikeys: new Map() },
  loaded: { webhookintegrations: false, apikeys: false },
  failures: {},
  connected: false,
});

export function useLive(namespace: string | undefined): LiveState {
  const [state, setState] = useState<LiveState>(empty);
  useEffect(() => {
    setState(empty());
    if (!namespace) return;
    const source = new EventSource(`/api/namespaces/${encodeURIComponent(namespace)}/live`);
    source.onopen = () => setState((s) => ({ ...s, connected: true }));
    source.onerror = () => setState((s) => ({ ...s, connected: false }));
    source.addEventListener('snapshot', (e) => {
      const { plural, items } = JSON.parse((e as MessageEvent<string>).data) as { plural: Plural; items: Resource[] };
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
    });
    source.addEventListener('change', (e) => {
      const { plural, type, object } = JSON.parse((e as MessageEvent<string>).data) as {
        plural: Plural;
        type: string;
        object: Resource;
      };
      if (!PLURALS.includes(plural)) return;
      setState((s) => {
        const next = new Map(s.items[plural]);
        if (type === 'DELETED') next.delete(object.metadata.name);
        else next.set(object.metadata.name, object);
        return { ...s, items: { ...s.items, [plural]: next } };
      });
    });
    source.addEventListener('failure', (e) => {
      const { plural, message } = JSON.parse((e as MessageEvent<string>).data) as { plural: Plural; message: string };
      setState((s) => ({
        ...s,
        failures: { ...s.failures, [plural]: message },
        loaded: { ...s.loaded, [plural]: true },
      }));
    });
    return () => source.close();
  }, [namespace]);
  return state;
}
