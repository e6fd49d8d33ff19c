import type { Destination, WebhookIntegration } from '../../../../api/v1alpha1/types.js';
import {
  destinationsNaming,
  integrationsNaming,
  keptWatchedSecret,
  secretsOf,
} from '../../../../operator/delivery/watched-secrets.js';

const destination = (namespace: string, name: string, spec: Destination['spec']): Destination => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'Destination',
  metadata: { namespace, name },
  spec,
});

describe('the Secrets a Destination names', () => {
  const http = destination('team-a', 'tickets', {
    http: {
      url: 'https://tickets.example',
      basicAuth: { secretRef: { name: 'creds' } },
      tls: { secretRef: { name: 'tls' } },
    },
  });
  const am = destination('team-a', 'am', {
    alertmanager: { urls: ['https://am.example'], bearerToken: { secretRef: { name: 'creds', key: 'token' } } },
  });
  const other = destination('team-b', 'tickets', {
    http: { url: 'https://b.example', basicAuth: { secretRef: { name: 'creds' } } },
  });

  it('are its basicAuth, bearerToken and TLS Secrets', () => {
    expect(secretsOf(http).sort()).toEqual(['creds', 'tls']);
    expect(secretsOf(am)).toEqual(['creds']);
    expect(secretsOf(destination('team-a', 'plain', { http: { url: 'https://x.example' } }))).toEqual([]);
  });

  it('are looked up in the Destination’s own namespace only', () => {
    expect(destinationsNaming([http, am, other], 'team-a', 'creds').map((d) => d.metadata.name)).toEqual([
      'tickets',
      'am',
    ]);
    expect(destinationsNaming([http, am, other], 'team-a', 'tls').map((d) => d.metadata.name)).toEqual(['tickets']);
    expect(destinationsNaming([http, am, other], 'team-c', 'creds')).toEqual([]);
  });

  it('are cached without their data', () => {
    expect(
      keptWatchedSecret({
        metadata: { name: 'creds', namespace: 'team-a', resourceVersion: '7', labels: { 'intake.dev/watch': 'true' } },
        data: { password: 'c2VjcmV0' },
      }),
    ).toEqual({ metadata: { name: 'creds', namespace: 'team-a', resourceVersion: '7' } });
  });
});

describe('the Secrets a WebhookIntegration names', () => {
  const wi = (namespace: string, name: string, spec: WebhookIntegration['spec']): WebhookIntegration => ({
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'WebhookIntegration',
    metadata: { namespace, name },
    spec,
  });
  const all = [
    wi('team-a', 'basic', { credentials: { secretRef: { name: 'creds' } } }),
    wi('team-a', 'signed', {
      authentication: { mode: 'signature', signature: { scheme: 'slack', secretRef: { name: 'slack' } } },
    }),
    wi('team-a', 'generated', {}),
    wi('team-b', 'basic', { credentials: { secretRef: { name: 'creds' } } }),
  ];

  it('are its password Secret and its signing Secret, in its own namespace', () => {
    expect(integrationsNaming(all, 'team-a', 'creds').map((w) => w.metadata.name)).toEqual(['basic']);
    expect(integrationsNaming(all, 'team-a', 'slack').map((w) => w.metadata.name)).toEqual(['signed']);
    expect(integrationsNaming(all, 'team-a', 'other')).toEqual([]);
  });
});
