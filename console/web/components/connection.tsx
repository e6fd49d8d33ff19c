/**
 * Where to send and with what: the URL, the signature scheme, the username, and the password or
 * key and signing secret, masked until revealed (only when the user's own token may read the
 * Secret: the server reads it as them).
 */
import { useState } from 'preact/hooks';
import type { Credentials } from '../../shared/console-api.js';
import { authenticationOf } from '../data/model.js';
import { readCredentials, type Plural, type Resource } from '../data/resources.js';
import { CopyButton } from './copy-button.js';
import { ErrorText } from './error-text.js';

const MASK = '••••••••••••';

export function Connection({ ns, plural, r }: { ns: string; plural: Plural; r: Resource }) {
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
      setCreds(await readCredentials(ns, plural, r.metadata.name));
      setShown(true);
    } catch (err) {
      setError((err as Error).message);
    }
  };
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
        {basic && secretRow(plural === 'apikeys' ? 'API key' : 'Password', 'secret-value', creds?.secret)}
        {signed && secretRow('Signing secret', 'signing-secret-value', creds?.signature?.signingSecret)}
      </dl>
      {from.length > 0 && <p class="hint">From the Secret {from.join(' and ')}.</p>}
      <ErrorText message={error} />
    </section>
  );
}
