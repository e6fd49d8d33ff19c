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

/** A Field bound to the object at `path`: shows its value, writes what is typed (through `parse`, when given). */
function PathField({
  obj,
  set,
  path,
  parse,
  ...field
}: { obj: Obj; set: SetField; path: string[]; parse?: (v: string) => unknown } & Omit<
  Parameters<typeof Field>[0],
  'value' | 'onInput'
>) {
  return <Field {...field} value={String(getPath(obj, path) ?? '')} onInput={(v) => set(path, parse ? parse(v) : v)} />;
}

/** The object's name: set when creating, fixed afterwards. */
const NameField = ({ obj, set, creating }: FormProps) => (
  <PathField id="f-name" label="Name" obj={obj} set={set} path={['metadata', 'name']} disabled={!creating} />
);

/** spec.suspend as a checkbox. */
const SuspendField = ({ obj, set, label }: { obj: Obj; set: SetField; label: string }) => (
  <div class="field checkbox">
    <input
      id="f-suspend"
      type="checkbox"
      checked={getPath(obj, ['spec', 'suspend']) === true}
      onChange={(e) => set(['spec', 'suspend'], e.currentTarget.checked)}
    />
    <label for="f-suspend">{label}</label>
  </div>
);

type FormProps = { obj: Obj; set: SetField; creating: boolean };

export function IntegrationForm({ obj, set, creating }: FormProps) {
  const mappingKind = getPath(obj, ['spec', 'mapping', 'expression']) !== undefined ? 'expression' : 'preset';
  const bound = { obj, set };
  return (
    <>
      <NameField obj={obj} set={set} creating={creating} />
      <PathField
        {...bound}
        id="f-integration"
        label="Integration name (optional)"
        hint="The URL ends in webhook_<this>; default: the resource's name."
        path={['spec', 'name']}
      />
      <PathField {...bound} id="f-username" label="Username (optional)" path={['spec', 'credentials', 'username']} />
      <PathField
        {...bound}
        id="f-grace"
        label="Rotation grace period (optional)"
        hint="How long the previous password keeps working after a rotation, e.g. 1h."
        path={['spec', 'credentials', 'rotationGracePeriod']}
      />
      <fieldset>
        <legend>Mapping (optional: for tools that post their own payload)</legend>
        {mappingKind === 'preset' ? (
          <PathField
            {...bound}
            id="f-preset"
            label="Preset"
            hint={`One of: ${PRESET_NAMES.join(', ')}. Empty: intake's own event format.`}
            list="presets"
            path={['spec', 'mapping', 'preset']}
          />
        ) : (
          <PathField
            {...bound}
            id="f-expression"
            label="JSONata expression"
            multiline
            path={['spec', 'mapping', 'expression']}
          />
        )}
        <datalist id="presets">
          {PRESET_NAMES.map((p) => (
            <option key={p} value={p} />
          ))}
        </datalist>
        <p class="hint">Tests and other mapping fields: use the YAML tab.</p>
      </fieldset>
      <SuspendField {...bound} label="Suspended (refuse events)" />
    </>
  );
}

export function ApiKeyForm({ obj, set, creating }: FormProps) {
  const bound = { obj, set };
  return (
    <>
      <NameField obj={obj} set={set} creating={creating} />
      <PathField
        {...bound}
        id="f-username"
        label="Username (optional)"
        hint="Default: the namespace."
        path={['spec', 'username']}
      />
      <PathField
        {...bound}
        id="f-maxseries"
        label="Max series (optional)"
        path={['spec', 'maxSeries']}
        parse={(v) => (v === '' ? '' : /^\d+$/.test(v) ? Number(v) : v)}
      />
      <PathField
        {...bound}
        id="f-grace"
        label="Rotation grace period (optional)"
        path={['spec', 'rotationGracePeriod']}
      />
      <SuspendField {...bound} label="Suspended" />
    </>
  );
}
