/**
 * Create and edit, as a form or as YAML (the same object underneath: switching tabs carries the
 * edits over). Nothing is checked here that the API server checks: its validation message is shown
 * as it is, so the console never disagrees with `kubectl apply`.
 */
import { useEffect, useState } from 'preact/hooks';
import { parse, stringify } from 'yaml';
import { api, KIND_OF, LABEL_OF, resourcePath, type Plural, type Resource } from '../data/api.js';
import { PRESET_NAMES } from '../../../api/mapping/presets.js';
import { gitOpsOwner, href } from '../data/model.js';

type Obj = Record<string, unknown>;

const getPath = (obj: Obj, path: string[]): unknown =>
  path.reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Obj)[k] : undefined), obj);

/** Sets a nested field, removing it (and emptied parents) when the value is '' or undefined. */
function setPath(obj: Obj, path: string[], value: unknown): Obj {
  const copy: Obj = structuredClone(obj);
  let o = copy;
  for (const k of path.slice(0, -1)) {
    if (!o[k] || typeof o[k] !== 'object') o[k] = {};
    o = o[k] as Obj;
  }
  const last = path[path.length - 1] as string;
  if (value === '' || value === undefined || value === false) delete o[last];
  else o[last] = value;
  // Drop parents left empty, so the object stays as small as `kubectl get -o yaml` would show it.
  for (let depth = path.length - 1; depth > 0; depth--) {
    const parent = getPath(copy, path.slice(0, depth)) as Obj | undefined;
    if (parent && Object.keys(parent).length === 0) {
      const grand = depth > 1 ? (getPath(copy, path.slice(0, depth - 1)) as Obj) : copy;
      delete grand[path[depth - 1] as string];
    }
  }
  return copy;
}

const blank = (ns: string, plural: Plural): Obj => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: KIND_OF[plural],
  metadata: { name: '', namespace: ns },
  spec: {},
});

/** What an edit sends back: the object without status and server-managed metadata. */
function editable(r: Resource): Obj {
  const { status: _status, ...rest } = structuredClone(r) as Resource;
  const metadata = { ...rest.metadata };
  for (const k of ['managedFields', 'uid', 'creationTimestamp', 'generation'] as const) delete metadata[k];
  return { ...rest, metadata };
}

function Field(props: {
  id: string;
  label: string;
  hint?: string;
  value: string;
  onInput: (v: string) => void;
  list?: string;
  disabled?: boolean;
  multiline?: boolean;
}) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      {props.multiline ? (
        <textarea
          id={props.id}
          rows={5}
          value={props.value}
          disabled={props.disabled}
          onInput={(e) => props.onInput(e.currentTarget.value)}
        />
      ) : (
        <input
          id={props.id}
          value={props.value}
          list={props.list}
          disabled={props.disabled}
          autocomplete="off"
          onInput={(e) => props.onInput(e.currentTarget.value)}
        />
      )}
      {props.hint && <p class="hint">{props.hint}</p>}
    </div>
  );
}

function IntegrationForm({
  obj,
  set,
  creating,
}: {
  obj: Obj;
  set: (p: string[], v: unknown) => void;
  creating: boolean;
}) {
  const str = (path: string[]) => String(getPath(obj, path) ?? '');
  const mappingKind = getPath(obj, ['spec', 'mapping', 'expression']) !== undefined ? 'expression' : 'preset';
  return (
    <>
      <Field
        id="f-name"
        label="Name"
        value={str(['metadata', 'name'])}
        disabled={!creating}
        onInput={(v) => set(['metadata', 'name'], v)}
      />
      <Field
        id="f-integration"
        label="Integration name (optional)"
        hint="The URL ends in webhook_<this>; default: the resource's name."
        value={str(['spec', 'name'])}
        onInput={(v) => set(['spec', 'name'], v)}
      />
      <Field
        id="f-username"
        label="Username (optional)"
        value={str(['spec', 'credentials', 'username'])}
        onInput={(v) => set(['spec', 'credentials', 'username'], v)}
      />
      <Field
        id="f-grace"
        label="Rotation grace period (optional)"
        hint="How long the previous password keeps working after a rotation, e.g. 1h."
        value={str(['spec', 'credentials', 'rotationGracePeriod'])}
        onInput={(v) => set(['spec', 'credentials', 'rotationGracePeriod'], v)}
      />
      <fieldset>
        <legend>Mapping (optional: for tools that post their own payload)</legend>
        {mappingKind === 'preset' ? (
          <Field
            id="f-preset"
            label="Preset"
            hint={`One of: ${PRESET_NAMES.join(', ')}. Empty: intake's own event format.`}
            list="presets"
            value={str(['spec', 'mapping', 'preset'])}
            onInput={(v) => set(['spec', 'mapping', 'preset'], v)}
          />
        ) : (
          <Field
            id="f-expression"
            label="JSONata expression"
            multiline
            value={str(['spec', 'mapping', 'expression'])}
            onInput={(v) => set(['spec', 'mapping', 'expression'], v)}
          />
        )}
        <datalist id="presets">
          {PRESET_NAMES.map((p) => (
            <option key={p} value={p} />
          ))}
        </datalist>
        <p class="hint">Tests and other mapping fields: use the YAML tab.</p>
      </fieldset>
      <div class="field checkbox">
        <input
          id="f-suspend"
          type="checkbox"
          checked={getPath(obj, ['spec', 'suspend']) === true}
          onChange={(e) => set(['spec', 'suspend'], e.currentTarget.checked)}
        />
        <label for="f-suspend">Suspended (refuse events)</label>
      </div>
    </>
  );
}

function ApiKeyForm({ obj, set, creating }: { obj: Obj; set: (p: string[], v: unknown) => void; creating: boolean }) {
  const str = (path: string[]) => String(getPath(obj, path) ?? '');
  return (
    <>
      <Field
        id="f-name"
        label="Name"
        value={str(['metadata', 'name'])}
        disabled={!creating}
        onInput={(v) => set(['metadata', 'name'], v)}
      />
      <Field
        id="f-username"
        label="Username (optional)"
        hint="Default: the namespace."
        value={str(['spec', 'username'])}
        onInput={(v) => set(['spec', 'username'], v)}
      />
      <Field
        id="f-maxseries"
        label="Max series (optional)"
        value={str(['spec', 'maxSeries'])}
        onInput={(v) => set(['spec', 'maxSeries'], v === '' ? '' : /^\d+$/.test(v) ? Number(v) : v)}
      />
      <Field
        id="f-grace"
        label="Rotation grace period (optional)"
        value={str(['spec', 'rotationGracePeriod'])}
        onInput={(v) => set(['spec', 'rotationGracePeriod'], v)}
      />
      <div class="field checkbox">
        <input
          id="f-suspend"
          type="checkbox"
          checked={getPath(obj, ['spec', 'suspend']) === true}
          onChange={(e) => set(['spec', 'suspend'], e.currentTarget.checked)}
        />
        <label for="f-suspend">Suspended</label>
      </div>
    </>
  );
}

export function Editor({ ns, plural, name, live }: { ns: string; plural: Plural; name?: string; live?: Resource }) {
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
    if (creating) return;
    api<Resource>('GET', resourcePath(ns, plural, name)).then(
      (r) => {
        setLoaded(r);
        setObj(editable(r));
      },
      (e: Error) => setError(e.message),
    );
  }, [ns, plural, name]);
  if (!obj)
    return (
      <main>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : (
          <p class="loading">Loading…</p>
        )}
      </main>
    );
  const owner = (loaded && gitOpsOwner(loaded)) ?? (live && gitOpsOwner(live));
  const set = (path: string[], v: unknown) => setObj(setPath(obj, path, v));
  const current = (): Obj => (tab === 'yaml' ? (parse(yamlText) as Obj) : obj);
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
      body = current();
    } catch (err) {
      setError(`YAML: ${(err as Error).message}`);
      return;
    }
    setBusy(true);
    try {
      const objName = String(getPath(body, ['metadata', 'name']) ?? '');
      if (creating) await api('POST', resourcePath(ns, plural), body);
      else await api('PUT', resourcePath(ns, plural, name), body);
      location.hash = href('ns', ns, plural, creating ? objName : (name as string));
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main>
      <p class="crumbs">
        <a href={href('ns', ns)}>{ns}</a> /{' '}
        {creating ? (
          `new ${LABEL_OF[plural].toLowerCase()}`
        ) : (
          <a href={href('ns', ns, plural, name as string)}>{name}</a>
        )}
      </p>
      <h1>{creating ? `New ${LABEL_OF[plural].toLowerCase()}` : `Edit ${name}`}</h1>
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
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <div class="actions">
          <button type="submit" disabled={busy || !!owner || (!creating && !loaded)}>
            {creating ? 'Create' : 'Save'}
          </button>
          <a class="button secondary" href={creating ? href('ns', ns) : href('ns', ns, plural, name as string)}>
            Cancel
          </a>
        </div>
      </form>
    </main>
  );
}
