/**
 * Edit, rotate, suspend or resume, delete. All off for an object Argo CD or Flux manages (the next
 * sync would undo them; the server refuses them too); rotation off when the secrets come from the
 * user's own Secret.
 */
import { useState } from 'preact/hooks';
import { gitOpsOwner, href, isSuspended, rotationOf } from '../data/model.js';
import { deleteResource, requestRotation, setSuspended, type Plural, type Resource } from '../data/resources.js';
import { ErrorText, Notice } from './error-text.js';

export function ObjectActions({ ns, plural, r }: { ns: string; plural: Plural; r: Resource }) {
  const [error, setError] = useState('');
  const [confirming, setConfirming] = useState(false);
  const [notice, setNotice] = useState('');
  const owner = gitOpsOwner(r);
  const name = r.metadata.name;
  const { renews, passwordWord, grace, graceWord } = rotationOf(plural, r);
  const userSecret = renews.length === 0;
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
          <a class="button" href={href('ns', ns, plural, name, 'edit')}>
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
              () => requestRotation(ns, plural, name),
              'Rotation requested: the operator writes a new secret to the credentials Secret.',
            )
          }
        >
          Rotate {renews.length > 0 ? renews.join(' and ') : passwordWord}
        </button>
        <button
          type="button"
          disabled={disabled}
          onClick={() =>
            run(
              () => setSuspended(ns, plural, name, !isSuspended(r)),
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
                  await deleteResource(ns, plural, name);
                  location.hash = href('ns', ns);
                }, 'Deleted.')
              }
            >
              Really delete {name}
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
      <Notice message={notice} />
      <ErrorText message={error} />
    </section>
  );
}
