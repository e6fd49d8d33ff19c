/**
 * What the API server refuses (the CRDs) and what the operator may publish (api/route.schema.json,
 * checked again by every ingester) must agree on every field the spec hands to the route: a value
 * the CRD lets through and the route schema refuses leaves an object the operator cannot publish.
 * For each such field, every constraint the route schema states is stated by the CRD, the same
 * or stricter (the same pattern; a subset of the values; bounds no wider). The durations (tolerance,
 * rotationGracePeriod) are strings in the spec and seconds or times in the route: the operator
 * converts and checks them (operator/signing.ts), and a route that still fails the schema is
 * Ready=False/InvalidSpec (operator/plan.ts), never published.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { routeSchema } from '../../../api/route.js';
import { ROOT } from '../../support/paths.js';

type Schema = Record<string, unknown>;
const CONSTRAINTS = [
  'pattern',
  'minLength',
  'maxLength',
  'enum',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
];

const specOf = (file: string): Schema => {
  const crd = parse(readFileSync(join(ROOT, 'crds', file), 'utf8')) as Schema;
  const version = (crd.spec as { versions: Array<{ schema: { openAPIV3Schema: Schema } }> }).versions[0];
  return ((version?.schema.openAPIV3Schema.properties as Schema).spec as Schema) ?? {};
};

/** Follows a dotted path of property names (`[]` for array items), resolving the route schema's $refs. */
function at(schema: Schema, path: string, root: Schema = schema): Schema {
  let node = schema;
  for (const step of path.split('.')) {
    node = step === '[]' ? (node.items as Schema) : ((node.properties as Schema | undefined)?.[step] as Schema);
    if (node === undefined) throw new Error(`no ${path}`);
    if (typeof node.$ref === 'string') node = resolve(root, node.$ref, node);
  }
  return node;
}

function resolve(root: Schema, ref: string, node: Schema): Schema {
  const target = ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<Schema>((n, key) => n[key] as Schema, root);
  const { $ref: _ref, ...rest } = node;
  return { ...target, ...rest };
}

const constraints = (node: Schema): Schema =>
  Object.fromEntries(CONSTRAINTS.filter((k) => node[k] !== undefined).map((k) => [k, node[k]]));

/** The route schema's constraints the CRD's field does not state at least as strictly. */
function looser(crd: Schema, route: Schema): string[] {
  const problems: string[] = [];
  for (const [key, wanted] of Object.entries(constraints(route))) {
    const got = crd[key];
    const holds =
      key === 'pattern'
        ? got === wanted
        : key === 'enum'
          ? Array.isArray(got) && got.every((v) => (wanted as unknown[]).includes(v))
          : typeof got === 'number' && (key.startsWith('max') ? got <= (wanted as number) : got >= (wanted as number));
    if (!holds)
      problems.push(`${key}: the route schema says ${JSON.stringify(wanted)}, the CRD ${JSON.stringify(got)}`);
  }
  return problems;
}

const route = routeSchema as unknown as Schema;
const webhookIntegration = specOf('intake.dev_webhookintegrations.yaml');
const apiKey = specOf('intake.dev_apikeys.yaml');

const SIGNATURE_FIELDS = ['scheme', 'header', 'timestampHeader', 'idHeader', 'algorithm', 'encoding', 'prefix'];
const pairs: Array<[kind: string, specPath: string, routePath: string, spec: Schema]> = [
  ['WebhookIntegration', 'authentication.mode', 'authentication.mode', webhookIntegration],
  ...[...SIGNATURE_FIELDS, 'signedContent'].map((f): (typeof pairs)[number] => [
    'WebhookIntegration',
    `authentication.signature.${f}`,
    `authentication.signature.${f}`,
    webhookIntegration,
  ]),
  ['WebhookIntegration', 'name', 'name', webhookIntegration],
  ['WebhookIntegration', 'credentials.username', 'credentials.[].username', webhookIntegration],
  ['WebhookIntegration', 'mapping.preset', 'mapping.preset', webhookIntegration],
  ['WebhookIntegration', 'mapping.expression', 'mapping.expression', webhookIntegration],
  ['WebhookIntegration', 'mapping.tests', 'mapping.tests', webhookIntegration],
  ['WebhookIntegration', 'destinations', 'destinations', webhookIntegration],
  ['WebhookIntegration', 'rules', 'rules', webhookIntegration],
  ['WebhookIntegration', 'inspect.requests', 'inspect.requests', webhookIntegration],
  ...[
    'name',
    'destinations',
    'match.severity.min',
    'match.severity.max',
    ...['source', 'class', 'type', 'manager', 'signature'].flatMap((f) => [
      `match.${f}`,
      `match.${f}.equals`,
      `match.${f}.in`,
      `match.${f}.in.[]`,
      `match.${f}.regex`,
    ]),
    'match.customInfo',
  ].map((f): (typeof pairs)[number] => ['WebhookIntegration', `rules.[].${f}`, `rules.[].${f}`, webhookIntegration]),
  ...['eventsPerSecond', 'eventsBurst', 'overLimitStatus'].map((f): (typeof pairs)[number] => [
    'WebhookIntegration',
    `limits.${f}`,
    `limits.${f}`,
    webhookIntegration,
  ]),
  ['ApiKey', 'username', 'credentials.[].username', apiKey],
  ['ApiKey', 'maxSeries', 'limits.maxSeries', apiKey],
  ...['dataPointsPerSecond', 'dataPointsBurst', 'maxSeries'].map((f): (typeof pairs)[number] => [
    'ApiKey',
    `limits.${f}`,
    `limits.${f}`,
    apiKey,
  ]),
];

describe('destination names', () => {
  // The operator publishes a name the spec gives as it is (a platform destination) or as
  // <namespace>/<name> (the namespace's own Destination): the route allows both, the CRD the name.
  const names = ['tickets', 'a', 'x-1', 'a'.repeat(63)];
  const refused = ['Tickets', '-a', 'a_b', 'a/b', 'a'.repeat(64)];
  it.each(['destinations.[]', 'rules.[].destinations.[]'])(
    'spec.%s: a name the CRD allows is one the route allows, alone or after a namespace',
    (path) => {
      const crd = new RegExp((at(webhookIntegration, path) as { pattern: string }).pattern);
      const published = new RegExp((at(route, path) as { pattern: string }).pattern);
      for (const n of names) {
        expect(crd.test(n)).toBe(true);
        expect(published.test(n)).toBe(true);
        expect(published.test(`team-a/${n}`)).toBe(true);
      }
      for (const n of refused) expect(crd.test(n)).toBe(false);
    },
  );
});

describe('the CRDs refuse what the route schema refuses', () => {
  it.each(pairs)('%s spec.%s states the route schema constraints of %s', (_kind, specPath, routePath, spec) => {
    const fromRoute = constraints(at(route, routePath));
    expect(Object.keys(fromRoute).length).toBeGreaterThan(0);
    expect(looser(at(spec, specPath), at(route, routePath))).toEqual([]);
  });

  it('covers every signature setting the spec and the route share', () => {
    const inSpec = Object.keys(at(webhookIntegration, 'authentication.signature').properties as Schema);
    const inRoute = Object.keys(at(route, 'authentication.signature').properties as Schema);
    const shared = inSpec.filter((k) => inRoute.includes(k)).sort();
    expect(shared).toEqual([...SIGNATURE_FIELDS, 'signedContent'].sort());
  });
});
