/**
 * Create and edit, as a form or as YAML (the same object underneath: switching tabs carries the
 * edits over). Nothing is checked here that the API server checks: its validation message is shown
 * as it is, so the console never disagrees with `kubectl apply`.
 */
import { useEffect, useState } from 'preact/hooks';
import { parse, stringify } from 'yaml';
import { ErrorText } from '../components/error-text.js';
import { ApiKeyForm, IntegrationForm } from '../components/object-forms.js';
import { gitOpsOwner, href } from '../data/model.js';
import { blank, editable, getPath, setPath, type Obj } from '../data/object-edit.js';
import {
  createResource,
  isPlural,
  LABEL_OF,
  readResource,
  replaceResource,
  type Plural,
  type Resource,
} from '../data/resources.js';
import type { ViewProps } from '../views.js';
import { NoSuchKind } from './detail.js';

export function NewPage({ params: { ns, plural } }: ViewProps<'ns' | 'plural'>) {
  return isPlural(plural) ? <Editor ns={ns} plural={plural} /> : <NoSuchKind plural={plural} />;
}

export function EditPage({ params: { ns, plural, name }, live }: ViewProps<'ns' | 'plural' | 'name'>) {
  if (!isPlural(plural)) return <NoSuchKind plural={plural} />;
  return <Editor ns={ns} plural={plural} name={name} live={live.items[plural].get(name)} />;
}

function Editor({ ns, plural, name, live }: { ns: string; plural: Plural; name?: string; live?: Resource }) {
  const creating = name === undefined;
  // Editing starts from the object as the API server has it now, read here: not from the live
  // list, which may not have arrived yet (or may be forbidden). Until it is read, nothing can be
  // saved, and whether Argo CD or Flux manages it is decided from it (and from the live copy).
  const [loaded, setLoaded] = useState<Resource | undefined>();
  const [obj, setObj] = useState<Obj | undefined>(creating ? blank(ns, plural) : undefined);
  const [tab, setTab] = useState<'form' | 'yaml'>('form');
  const [yamlText, setYamlText] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (name === undefined) return;
    readResource(ns, plural, name).then(
      (r) => {
        setLoaded(r);
        setObj(editable(r));
      },
      (e: Error) => setError(e.message),
    );
  }, [ns, plural, name]);
  if (!obj) return <main>{error ? <ErrorText message={error} /> : <p class="loading">Loading…</p>}</main>;
  const owner = (loaded && gitOpsOwner(loaded)) ?? (live && gitOpsOwner(live));
  const set = (path: string[], v: unknown) => setObj(setPath(obj, path, v));
  const switchTo = (next: 'form' | 'yaml') => {
    setError('');
    if (next === tab) return;
    if (next === 'yaml') setYamlText(stringify(obj));
    else {
      try {
        setObj(parse(yamlText) as Obj);
      } catch (err) {
        setError(`YAML: ${(err as Error).message}`);
        return;
      }
    }
    setTab(next);
  };
  const save = async (e: Event) => {
    e.preventDefault();
    setError('');
    let body: Obj;
    try {
      body = tab === 'yaml' ? (parse(yamlText) as Obj) : obj;
    } catch (err) {
      setError(`YAML: ${(err as Error).message}`);
      return;
    }
    setBusy(true);
    try {
      if (name === undefined) await createResource(ns, plural, body);
      else await replaceResource(ns, plural, name, body);
      location.hash = href('ns', ns, plural, name ?? String(getPath(body, ['metadata', 'name']) ?? ''));
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const label = LABEL_OF[plural].toLowerCase();
  return (
    <main>
      <p class="crumbs">
        <a href={href('ns', ns)}>{ns}</a> /{' '}
        {name === undefined ? `new ${label}` : <a href={href('ns', ns, plural, name)}>{name}</a>}
      </p>
      <h1>{name === undefined ? `New ${label}` : `Edit ${name}`}</h1>
      {owner && (
        <p class="notice" role="status">
          Managed by {owner.tool} ({owner.owner}): change it in Git; the console does not edit it.
        </p>
      )}
      <div class="tabs" role="tablist">
        <button type="button" role="tab" aria-selected={tab === 'form'} onClick={() => switchTo('form')}>
          Form
        </button>
        <button type="button" role="tab" aria-selected={tab === 'yaml'} onClick={() => switchTo('yaml')}>
          YAML
        </button>
      </div>
      <form onSubmit={save} class="editor">
        {tab === 'yaml' ? (
          <div class="field">
            <label for="f-yaml">YAML</label>
            <textarea
              id="f-yaml"
              class="code"
              rows={20}
              spellcheck={false}
              value={yamlText}
              onInput={(e) => setYamlText(e.currentTarget.value)}
            />
          </div>
        ) : plural === 'webhookintegrations' ? (
          <IntegrationForm obj={obj} set={set} creating={creating} />
        ) : (
          <ApiKeyForm obj={obj} set={set} creating={creating} />
        )}
        <ErrorText message={error} />
        <div class="actions">
          <button type="submit" disabled={busy || !!owner || (!creating && !loaded)}>
            {creating ? 'Create' : 'Save'}
          </button>
          <a class="button secondary" href={name === undefined ? href('ns', ns) : href('ns', ns, plural, name)}>
            Cancel
          </a>
        </div>
      </form>
    </main>
  );
}
