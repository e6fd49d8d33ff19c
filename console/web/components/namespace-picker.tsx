/** The header's namespace field: the namespaces the user may list to pick from, any other typed in. */
import { useEffect, useState } from 'preact/hooks';
import { href } from '../data/model.js';

export function NamespacePicker({ namespaces, current }: { namespaces: string[]; current: string }) {
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
        {namespaces.map((n) => (
          <option key={n} value={n} />
        ))}
      </datalist>
      <button type="submit">Open</button>
    </form>
  );
}
