/**
 * The demo credentials (examples/intake.yaml and the unit harness's routes) and the shape of a
 * tenant's integration that unit, end-to-end tests and the benchmarks write into their configs.
 */

export const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** The example config's webhook user. */
export const DEMO = { user: 'demo', password: 'demo-password' };
export const DEMO_AUTH = basic(DEMO.user, DEMO.password);
/** The example config's API key (integration `default`). */
export const API_KEY = 'default_0123456789abcdef0123456789abcdef';

/** A tenant's integration for a standalone file: user `name`, password `<name>-password`, plus `extra` (mapping, limits...). */
export const tenantRoute = (name: string, namespace: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace,
  credentials: [{ username: name, secret: { plain: `${name}-password` } }],
  ...extra,
});

/** The Basic header of a tenantRoute. */
export const tenantAuth = (name: string): { authorization: string } => ({
  authorization: basic(name, `${name}-password`),
});
