/**
 * The form tab of the editor: one field per setting a user commonly sets, each written into the
 * object at its path (the YAML tab has the rest).
 */
import { PRESET_NAMES } from '../../../api/mapping/presets.js';
import { getPath, type Obj } from '../data/object-edit.js';

type SetField = (path: string[], value: unknown) => void;

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

export function IntegrationForm({ obj, set, creating }: { obj: Obj; set: SetField; creating: boolean }) {
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

export function ApiKeyForm({ obj, set, creating }: { obj: Obj; set: SetField; creating: boolean }) {
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
