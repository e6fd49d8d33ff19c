/** The route contract's authentication: which combinations validateRoute refuses, naming the field; secrets' forms. */
import { Webhook } from 'standardwebhooks';
import { validateRoute, RouteValidationError, type Route } from '../../../api/route.js';
import { generateSigningSecret, signingSecretProblem } from '../../../api/signatures.js';

const route = (extra: Partial<Route>): unknown => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name: 'signed',
  namespace: 'team-a',
  credentials: [],
  ...extra,
});

const problemsOf = (doc: unknown): string[] => {
  try {
    validateRoute(doc);
    return [];
  } catch (err) {
    return (err as RouteValidationError).problems;
  }
};

describe('validateRoute: authentication', () => {
  it('accepts a signature-only route with no Basic credentials', () => {
    const doc = route({
      authentication: { mode: 'signature', signature: { scheme: 'github', secrets: [{ value: 'x' }] } },
    });
    expect(problemsOf(doc)).toEqual([]);
  });

  it('refuses each inconsistent combination, naming the field', () => {
    expect(problemsOf(route({}))).toEqual([
      '/credentials must hold at least one credential with authentication mode basic',
    ]);
    expect(problemsOf(route({ authentication: { mode: 'signature' } }))).toEqual([
      '/authentication/signature is required with authentication mode signature',
    ]);
    expect(
      problemsOf(
        route({
          credentials: [{ username: 'u', secret: { plain: 'p' } }],
          authentication: { mode: 'basic', signature: { scheme: 'github', secrets: [{ value: 'x' }] } },
        }),
      ),
    ).toEqual(['/authentication/signature is only used with mode signature or basic+signature']);
    expect(
      problemsOf(
        route({
          authentication: {
            mode: 'signature',
            signature: { scheme: 'slack', secrets: [{ value: 'x' }], algorithm: 'sha512', header: 'X-A' },
          },
        }),
      ),
    ).toEqual([
      '/authentication/signature/algorithm is only for scheme hmac',
      '/authentication/signature/header is only for schemes grafana and hmac (slack has its own header)',
    ]);
  });

  it('refuses an hmac template that reads a header it does not sign, or signs one it does not read', () => {
    const hmac = (s: Record<string, unknown>) =>
      problemsOf(
        route({
          authentication: {
            mode: 'signature',
            signature: { scheme: 'hmac', secrets: [{ value: 'x' }], header: 'X-Sig', ...s },
          } as Route['authentication'],
        }),
      );
    expect(hmac({ timestampHeader: 'X-Ts' })).toEqual([
      '/authentication/signature/signedContent must contain {timestamp} when timestampHeader is set (else it is not signed)',
    ]);
    expect(hmac({ signedContent: '{id}.{body}' })).toEqual([
      '/authentication/signature/signedContent uses {id}, which needs idHeader',
    ]);
    expect(hmac({ signedContent: '{timestamp}.{timestamp}' })[0]).toContain('{body} exactly once');
    expect(
      problemsOf(
        route({ authentication: { mode: 'signature', signature: { scheme: 'hmac', secrets: [{ value: 'x' }] } } }),
      ),
    ).toEqual(['/authentication/signature/header is required with scheme hmac']);
  });

  it('refuses a Standard Webhooks secret that is not whsec_ + base64, without quoting it', () => {
    const problems = problemsOf(
      route({
        authentication: {
          mode: 'signature',
          signature: { scheme: 'standard-webhooks', secrets: [{ value: 'not base64!' }] },
        },
      }),
    );
    expect(problems).toEqual([
      '/authentication/signature/secrets/0/value is not a Standard Webhooks secret (whsec_ followed by base64)',
    ]);
  });

  it('refuses authentication on an ApiKey', () => {
    const doc = {
      ...(route({ credentials: [{ username: 'u', secret: { plain: 'k' } }] }) as object),
      kind: 'ApiKey',
      authentication: { mode: 'basic' },
    };
    expect(problemsOf(doc)).toEqual([
      '/authentication is only for a WebhookIntegration (an ApiKey is its own credential)',
    ]);
  });
});

describe('generated signing secrets', () => {
  it('Standard Webhooks: whsec_ + base64 of 32 bytes, usable by the reference library', () => {
    const secret = generateSigningSecret('standard-webhooks');
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(signingSecretProblem('standard-webhooks', secret)).toBeUndefined();
    expect(() => new Webhook(secret).sign('msg_1', new Date(), '{}')).not.toThrow();
  });

  it('the others: 256 random bits, URL-safe, different each time', () => {
    const a = generateSigningSecret('github');
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(generateSigningSecret('github')).not.toBe(a);
  });
});
