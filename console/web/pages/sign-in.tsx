/** Token mode's sign-in: the user pastes a Kubernetes token, which every request then acts as. */
import { useState } from 'preact/hooks';
import { ErrorText } from '../components/error-text.js';
import { signIn } from '../data/session.js';

export function SignInPage({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    setError('');
    try {
      await signIn(token);
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
        <ErrorText message={error} />
      </form>
    </main>
  );
}
