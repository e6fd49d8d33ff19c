/** The object an edit works on: a new one's blank, an existing one's editable part, and nested fields read and set. */
import { KIND_OF, type Plural, type Resource } from './resources.js';

export type Obj = Record<string, unknown>;

export const getPath = (obj: Obj, path: string[]): unknown =>
  path.reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Obj)[k] : undefined), obj);

/** Sets a nested field, removing it (and emptied parents) when the value is '', false or undefined. */
export function setPath(obj: Obj, path: string[], value: unknown): Obj {
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

export const blank = (ns: string, plural: Plural): Obj => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: KIND_OF[plural],
  metadata: { name: '', namespace: ns },
  spec: {},
});

/** What an edit sends back: the object without status and server-managed metadata. */
export function editable(r: Resource): Obj {
  const { status: _status, ...rest } = structuredClone(r) as Resource;
  const metadata = { ...rest.metadata };
  for (const k of ['managedFields', 'uid', 'creationTimestamp', 'generation'] as const) delete metadata[k];
  return { ...rest, metadata };
}
