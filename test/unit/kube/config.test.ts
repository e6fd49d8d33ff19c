import { isNamespaceTerminating, statusOf } from '../../../kube/config.js';

describe('API error helpers', () => {
  it('reads the status of client-node and watch errors', () => {
    expect(statusOf({ code: 404 })).toBe(404);
    expect(statusOf({ statusCode: 410 })).toBe(410);
    expect(statusOf(new Error('x'))).toBeUndefined();
  });

  it('tells a terminating namespace from an RBAC denial', () => {
    expect(
      isNamespaceTerminating({
        code: 403,
        body: '{"reason":"Forbidden","details":{"causes":[{"reason":"NamespaceTerminating"}]}}',
      }),
    ).toBe(true);
    expect(
      isNamespaceTerminating({ code: 403, body: 'User "system:serviceaccount:a:b" cannot create resource "secrets"' }),
    ).toBe(false);
    expect(isNamespaceTerminating({ code: 409, body: 'NamespaceTerminating' })).toBe(false);
  });
});
