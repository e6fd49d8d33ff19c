/**
 * "Copy as curl" (console/server/curl.ts): the shell itself runs the command, with a curl that
 * prints its arguments instead of sending, and openssl computing the signature; the request it
 * would send must pass the ingester's own checks (Basic credentials as given; the signature by
 * ingester/auth/signature-check.ts) for every scheme.
 */
import { execFileSync } from 'node:child_process';
import type { RouteSignature } from '../../../api/route.js';
import { generateSigningSecret, ruleOf, SIGNATURE_SCHEMES } from '../../../api/signatures.js';
import { curlCommand } from '../../../console/server/curl.js';
import { readSignedHeaders, signatureMatches } from '../../../ingester/auth/signature-check.js';
import { compileSignature } from '../../../ingester/routing/signing-secrets.js';

/** The arguments the command passes to curl, the shell having done its quoting, expansions and openssl. */
const argv = (command: string, env: Record<string, string> = {}): string[] =>
  JSON.parse(
    execFileSync(
      'sh',
      ['-c', `curl() { node -e 'console.log(JSON.stringify(process.argv.slice(1)))' -- "$@"; }\n${command}`],
      { env: { ...process.env, ...env }, encoding: 'utf8' },
    ),
  ) as string[];

/** The request those arguments describe. */
function request(args: string[]): { headers: string[]; body: string; user?: string; url: string } {
  const headers: string[] = [];
  let body = '';
  let user: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '-H') headers.push(...(args[++i] as string).split(/:\s?(.*)/s, 2));
    else if (a === '--data-binary') body = args[++i] as string;
    else if (a === '-u') user = args[++i];
  }
  return { headers, body, ...(user !== undefined ? { user } : {}), url: args[args.length - 1] as string };
}

const payload = `{"description":"it's \\"down\\" $HOME \`id\` 100% \\\\n é","source":"web-01","severity":5}`;

describe('curlCommand: Basic credentials', () => {
  it('quotes the payload and credentials so the shell passes them unchanged', () => {
    const args = argv(
      curlCommand({
        url: 'http://127.0.0.1:8080/events/webhook_x',
        payload,
        basic: { username: 'x', password: "p'w$d" },
      }),
    );
    expect(args).toEqual([
      '-sS',
      '-u',
      "x:p'w$d",
      '-H',
      'Content-Type: application/json',
      '--data-binary',
      payload,
      'http://127.0.0.1:8080/events/webhook_x',
    ]);
  });

  it('reads $PASSWORD when the secret may not be revealed', () => {
    const args = argv(curlCommand({ url: 'http://h/events/webhook_x', payload: '{}', basic: { username: 'x' } }), {
      PASSWORD: 'from-env',
    });
    expect(args[2]).toBe('x:from-env');
  });
});

describe('curlCommand: a signature computed by openssl when the command runs', () => {
  const settings: Array<Omit<RouteSignature, 'secrets'>> = [
    { scheme: 'standard-webhooks' },
    { scheme: 'github' },
    { scheme: 'grafana' },
    { scheme: 'grafana', header: 'X-My-Signature', timestampHeader: 'X-Grafana-Alerting-Timestamp' },
    { scheme: 'slack' },
    { scheme: 'pagerduty' },
    { scheme: 'hmac', header: 'X-Sig' },
    {
      scheme: 'hmac',
      header: 'X-Signature',
      timestampHeader: 'X-Timestamp',
      idHeader: 'X-Delivery',
      algorithm: 'sha512',
      encoding: 'base64',
      prefix: 'sha512="$x',
      signedContent: "{id}|%s\\n'{timestamp}|{body}",
    },
  ];
  expect(new Set(settings.map((s) => s.scheme))).toEqual(new Set(SIGNATURE_SCHEMES));

  const verify = (sig: RouteSignature, headers: string[], body: string): string => {
    const compiled = compileSignature(sig);
    const read = readSignedHeaders(compiled.rule, headers, Date.now());
    if (typeof read === 'string') return read;
    return signatureMatches(compiled, read, Buffer.from(body), Date.now()) ? 'ok' : 'signature_invalid';
  };

  it.each(settings.map((s) => [s.scheme, s] as const))(
    '%s: the request it sends passes the ingester check',
    (_scheme, s) => {
      const secret = s.scheme === 'github' ? "It's a $ecret to `Everybody`" : generateSigningSecret(s.scheme);
      const sig: RouteSignature = { ...s, secrets: [{ value: secret }] };
      const command = curlCommand({
        url: 'http://h/events/webhook_x',
        payload,
        signature: { rule: ruleOf(s), secret },
      });
      const sent = request(argv(command));
      expect(sent.body).toBe(payload);
      expect(sent.url).toBe('http://h/events/webhook_x');
      expect(sent.user).toBeUndefined();
      expect(verify(sig, sent.headers, sent.body)).toBe('ok');
      // And with another secret it would be refused: the signature really depends on it.
      expect(verify({ ...sig, secrets: [{ value: generateSigningSecret(s.scheme) }] }, sent.headers, sent.body)).toBe(
        'signature_invalid',
      );
    },
  );

  it('basic+signature: both; without the secrets, $PASSWORD and $SIGNING_SECRET from the environment', () => {
    const secret = generateSigningSecret('standard-webhooks');
    const sig: RouteSignature = { scheme: 'standard-webhooks', secrets: [{ value: secret }] };
    const command = curlCommand({
      url: 'http://h/events/webhook_x',
      payload,
      basic: { username: 'x' },
      signature: { rule: ruleOf(sig) },
    });
    const sent = request(argv(command, { PASSWORD: 'pw', SIGNING_SECRET: secret }));
    expect(sent.user).toBe('x:pw');
    expect(verify(sig, sent.headers, sent.body)).toBe('ok');
  });
});
