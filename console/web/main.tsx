/**
 * The intake console: a single-page app (Preact) over the console server's API. Pages by URL hash:
 *   #/ns/<namespace>                      integrations and API keys, live
 *   #/ns/<namespace>/new/<plural>         create (form or YAML)
 *   #/ns/<namespace>/<plural>/<name>      detail
 *   #/ns/<namespace>/<plural>/<name>/edit edit (form or YAML)
 *   #/ns/<namespace>/destinations[/<name>] destinations, one destination (pages/destinations.tsx, destination.tsx)
 *   #/ns/<namespace>/platform-destinations/<name> a platform destination
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, PLURALS, type Plural } from './api.js';
import { Detail } from './detail.js';
import { Editor } from './editor.js';
import { List } from './list.js';
import { DestinationPage } from './pages/destination.js';
import { Destinations } from './pages/destinations.js';
import { useLive } from './live.js';
import { href } from './model.js';
import { findSession, forget, remember } from './session.js';

interface Session {
  mode: 'kubeconfig' | 'token';
  signedIn: boolean;
  user?: string;
  namespaces?: string[];
  defaultNamespace?: string;
}

/** The page the URL's hash shows. */
type View =
  | { page: 'list'; ns: string }
  | { page: 'new'; ns: string; plural: Plural }
  | { page: 'detail' | 'edit'; ns: string; plural: Plural; name: string }
  | { page: 'destinations'; ns: string }
  | { page: 'destination'; ns: string; name: string; platform: boolean }
  | { page: 'home' };

function parseView(hash: string): View {
  const parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (parts[0] !== 'ns' || !parts[1]) return { page: 'home' };
  const ns = parts[1];
  if (parts[2] === 'destinations' || parts[2] === 'platform-destinations')
    return parts[3]
      ? { page: 'destination', ns, name: parts[3], platform: parts[2] === 'platform-destinations' }
      : { page: 'destinations', ns };
  const plural = parts[3] as Plural;
  if (parts[2] === 'new' && PLURALS.includes(plural)) return { page: 'new', ns, plural };
  const p2 = parts[2] as Plural;
  if (PLURALS.includes(p2) && parts[3])
    return { page: parts[4] === 'edit' ? 'edit' : 'detail', ns, plural: p2, name: parts[3] };
  return { page: 'list', ns };
}

function useView(): View {
  const [view, setView] = useState(() => parseView(location.hash));
  useEffect(() => {
    const on = () => setView(parseView(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return view;
}

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    setError('');
    try {
      remember((await api<{ session: string }>('POST', '/api/login', { token })).session);
      onSignedIn();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <main class="signin">
      <h1>intake console</h1>
      <form onSubmit={submit}>
        <label for="token">Kubernetes token</label>
        <p class="hint">
          For example <code>kubectl create token &lt;serviceaccount&gt; -n &lt;namespace&gt;</code>. Every request the
          console makes to Kubernetes uses this token: you see and change what your RBAC allows.
        </p>
        <textarea id="token" rows={4} value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        <button type="submit">Sign in</button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

function NamespacePicker({ session, current }: { session: Session; current: string }) {
  const [value, setValue] = useState(current);
  useEffect(() => setValue(current), [current]);
  return (
    <form
      class="ns-picker"
      onSubmit={(e) => {
        e.preventDefault();
        if (value.trim()) location.hash = href('ns', value.trim());
      }}
    >
      <label for="namespace">Namespace</label>
      <input
        id="namespace"
        list="namespaces"
        value={value}
        onInput={(e) => setValue(e.currentTarget.value)}
        autocomplete="off"
      />
      <datalist id="namespaces">
        {(session.namespaces ?? []).map((n) => (
          <option key={n} value={n} />
        ))}
      </datalist>
      <button type="submit">Open</button>
    </form>
  );
}

function App() {
  const [session, setSession] = useState<Session | undefined>();
  const [error, setError] = useState('');
  const view = useView();
  const load = () => api<Session>('GET', '/api/session').then(setSession, (err: ApiError) => setError(err.message));
  useEffect(() => {
    void (async () => {
      // The URL `intake console` printed: its one-time token becomes this tab's session (spent
      // here, and taken out of the address bar first). Otherwise the tab's own session, or that of
      // another of the console's tabs.
      const token = new URLSearchParams(location.search).get('token');
      try {
        if (token !== null) {
          history.replaceState(null, '', `${location.pathname}${location.hash}`);
          remember((await api<{ session: string }>('POST', '/api/login', { token })).session);
        } else await findSession();
      } catch (err) {
        setError((err as Error).message);
        return;
      }
      await load();
    })();
  }, []);
  const ns = view.page === 'home' ? undefined : view.ns;
  const live = useLive(session?.signedIn ? ns : undefined);
  useEffect(() => {
    if (session?.signedIn && view.page === 'home') location.replace(href('ns', session.defaultNamespace ?? 'default'));
  }, [session, view.page]);

  if (error)
    return (
      <main>
        <p class="error" role="alert">
          {error}
        </p>
      </main>
    );
  if (!session) return <p class="loading">Loading…</p>;
  if (!session.signedIn) return <SignIn onSignedIn={load} />;
  const signOut = async () => {
    await api('POST', '/api/logout');
    forget();
    location.hash = '';
    await load();
  };
  return (
    <>
      <header class="top">
        <a class="brand" href={ns ? href('ns', ns) : '#/'}>
          intake console
        </a>
        {ns && <NamespacePicker session={session} current={ns} />}
        {ns && (
          <a class="nav" href={href('ns', ns, 'destinations')}>
            Destinations
          </a>
        )}
        <span class={`live-dot ${live.connected ? 'on' : 'off'}`} title={live.connected ? 'live' : 'reconnecting'}>
          {live.connected ? 'live' : 'offline'}
        </span>
        {session.mode === 'token' && (
          <span class="user">
            {session.user}{' '}
            <button type="button" class="link" onClick={signOut}>
              Sign out
            </button>
          </span>
        )}
      </header>
      {live.refused && (
        <p class="error live-refused" role="alert">
          Not following this page live: {live.refused}
        </p>
      )}
      {view.page === 'list' && <List ns={view.ns} live={live} />}
      {view.page === 'destinations' && <Destinations ns={view.ns} />}
      {view.page === 'destination' && (
        <DestinationPage key={`${view.ns}/${view.name}`} ns={view.ns} name={view.name} platform={view.platform} />
      )}
      {/* Keyed by the object: another object's page starts afresh (its payloads, its revealed secrets). */}
      {view.page === 'new' && <Editor key={`new/${view.ns}/${view.plural}`} ns={view.ns} plural={view.plural} />}
      {view.page === 'edit' && (
        <Editor
          key={`edit/${view.ns}/${view.plural}/${view.name}`}
          ns={view.ns}
          plural={view.plural}
          name={view.name}
          live={live.items[view.plural].get(view.name)}
        />
      )}
      {view.page === 'detail' && (
        <Detail
          key={`detail/${view.ns}/${view.plural}/${view.name}`}
          ns={view.ns}
          plural={view.plural}
          name={view.name}
          resource={live.items[view.plural].get(view.name)}
          loaded={live.loaded[view.plural]}
        />
      )}
    </>
  );
}

render(<App />, document.getElementById('app') as HTMLElement);
