import { validateRoute, RouteValidationError } from '../../../api/route.js';

const valid = {
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name: 'demo',
  namespace: 'default',
  credentials: [{ username: 'demo', secret: { sha256: 'a'.repeat(64) } }],
};

describe('validateRoute', () => {
  it('accepts a well-formed route', () => {
    expect(validateRoute(valid).name).toBe('demo');
  });
  it('rejects an integration name the URL cannot carry', () => {
    expect(() => validateRoute({ ...valid, name: 'Bad Name' })).toThrow(RouteValidationError);
  });
  it('rejects a credential with two verifiers', () => {
    const doc = { ...valid, credentials: [{ username: 'demo', secret: { sha256: 'a'.repeat(64), plain: 'x' } }] };
    expect(() => validateRoute(doc)).toThrow(/secret/);
  });
  it('rejects a malformed validity window', () => {
    const doc = { ...valid, credentials: [{ username: 'demo', secret: { plain: 'x' }, notAfter: 'tomorrow' }] };
    expect(() => validateRoute(doc)).toThrow(/notAfter/);
  });
});
