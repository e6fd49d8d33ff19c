/**
 * The app around the pages: the session (signed in, or the sign-in page), the header (namespace,
 * live or not, the user), and the page of the view the address names (views.ts), keyed by the
 * address so that another object's page starts afresh (its payloads, its revealed secrets).
 */
import { useEffect, useState } from 'preact/hooks';
import type { SessionInfo } from '../shared/console-api.js';
import { ErrorText } from './components/error-text.js';
import { NamespacePicker } from './components/namespace-picker.js';
import { useLive } from './data/live.js';
import { href } from './data/model.js';
import { readSession, resumeSession, signOut } from './data/session.js';
import { SignInPage } from './pages/sign-in.js';
import { matchView, type View } from './views.js';

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

export function App({ views }: { views: readonly View[] }) {
  const [session, setSession] = useState<SessionInfo | undefined>();
  const [error, setError] = useState('');
  const hash = useHash();
  const matched = matchView(views, hash);
  const load = () => readSession().then(setSession, (err: Error) => setError(err.message));
  useEffect(() => {
    resumeSession().then(load, (err: Error) => setError(err.message));
  }, []);
  const ns = matched?.params.ns;
  const live = useLive(session?.signedIn ? ns : undefined);
  // An address no view shows (the first page, too): the default namespace's list.
  useEffect(() => {
    if (session?.signedIn && !matched) location.replace(href('ns', session.defaultNamespace ?? 'default'));
  }, [session, matched === undefined]);

  if (error)
    return (
      <main>
        <ErrorText message={error} />
      </main>
    );
  if (!session) return <p class="loading">Loading…</p>;
  if (!session.signedIn) return <SignInPage onSignedIn={load} />;
  const leave = async () => {
    await signOut();
    location.hash = '';
    await load();
  };
  const Page = matched?.view.page;
  return (
    <>
      <header class="top">
        <a class="brand" href={ns ? href('ns', ns) : '#/'}>
          intake console
        </a>
        {ns && <NamespacePicker namespaces={session.namespaces ?? []} current={ns} />}
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
            <button type="button" class="link" onClick={leave}>
              Sign out
            </button>
          </span>
        )}
      </header>
      <ErrorText message={live.refused && `Not following this page live: ${live.refused}`} class="live-refused" />
      {Page && matched && <Page key={hash} params={matched.params} live={live} session={session} />}
    </>
  );
}
