/**
 * Each scheme's signature check against signatures made by the senders' own code or published by
 * them: GitHub's and Slack's documented examples, the Standard Webhooks reference library,
 * @octokit/webhooks-methods, and HMACs computed as Grafana's and PagerDuty's docs describe. And the
 * sender's side, api/signatures.ts signatureHeaders (the console's test events): what it signs is
 * what this check accepts, for every scheme, and what the senders' own examples and libraries make.
 */
import { createHmac } from 'node:crypto';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import type { RouteSignature } from '../../../../api/route.js';
import { generateSigningSecret, ruleOf, signatureHeaders, SIGNATURE_SCHEMES } from '../../../../api/signatures.js';
import { readSignedHeaders, repeatableForMs, signatureMatches } from '../../../../ingester/auth/signature-check.js';
import { compileSignature } from '../../../../ingester/routing/signing-secrets.js';

/** Raw headers as Node gives them: [name, value, name, value, ...]. */
const raw = (headers: Record<string, string>): string[] => Object.entries(headers).flat();

function check(sig: RouteSignature, headers: Record<string, string>, body: string | Buffer, nowMs: number) {
  const compiled = compileSignature(sig);
  const read = readSignedHeaders(compiled.rule, raw(headers), nowMs);
  if (typeof read === 'string') return read;
  return signatureMatches(compiled, read, Buffer.isBuffer(body) ? body : Buffer.from(body), nowMs)
    ? 'ok'
    : 'signature_invalid';
}

const hmacHex = (alg: string, key: string | Buffer, content: string): string =>
  createHmac(alg, key).update(content).digest('hex');

describe('github', () => {
  const sig: RouteSignature = { scheme: 'github', secrets: [{ value: "It's a Secret to Everybody" }] };

  it("verifies GitHub's documented example", () => {
    // docs.github.com "Validating webhook deliveries": this secret and payload give this signature.
    const header = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(check(sig, { 'X-Hub-Signature-256': header }, 'Hello, World!', Date.now())).toBe('ok');
    expect(check(sig, { 'X-Hub-Signature-256': header }, 'Hello, World?', Date.now())).toBe('signature_invalid');
  });

  it('verifies what @octokit/webhooks-methods signs, and nothing signed with another secret', async () => {
    const body = JSON.stringify({ source: 'web-01', severity: 3 });
    expect(check(sig, { 'x-hub-signature-256': await octokitSign("It's a Secret to Everybody", body) }, body, 0)).toBe(
      'ok',
    );
    expect(check(sig, { 'x-hub-signature-256': await octokitSign('another secret', body) }, body, 0)).toBe(
      'signature_invalid',
    );
  });

  it('refuses a missing or repeated header as signature_missing, a malformed one as signature_invalid', () => {
    expect(check(sig, {}, 'Hello, World!', 0)).toBe('signature_missing');
    const twice = ['x-hub-signature-256', 'sha256=00', 'X-Hub-Signature-256', 'sha256=00'];
    const compiled = compileSignature(sig);
    expect(readSignedHeaders(compiled.rule, twice, 0)).toBe('signature_missing');
    expect(check(sig, { 'x-hub-signature-256': 'sha1=757107ea' }, 'Hello, World!', 0)).toBe('signature_invalid');
    expect(check(sig, { 'x-hub-signature-256': 'sha256=zz' }, 'Hello, World!', 0)).toBe('signature_invalid');
  });
});

describe('slack', () => {
  // api.slack.com/authentication/verifying-requests-from-slack: the documented example request.
  const secret = '8f742231b10e8888abcd99yyyzzz85a5';
  const timestamp = '1531420618';
  const body =
    'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
  const signature = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
  const sig: RouteSignature = { scheme: 'slack', secrets: [{ value: secret }] };
  const headers = { 'X-Slack-Request-Timestamp': timestamp, 'X-Slack-Signature': signature };
  const then = Number(timestamp) * 1000;

  it("verifies Slack's documented example at its time", () => {
    expect(check(sig, headers, body, then + 60_000)).toBe('ok');
  });

  it('refuses it five minutes and one second later, or earlier, as timestamp_out_of_range', () => {
    expect(check(sig, headers, body, then + 301_000)).toBe('timestamp_out_of_range');
    expect(check(sig, headers, body, then - 301_000)).toBe('timestamp_out_of_range');
    expect(check({ ...sig, toleranceSeconds: 600 }, headers, body, then + 301_000)).toBe('ok');
  });

  it('refuses a changed timestamp (it is signed) and a missing one', () => {
    expect(check(sig, { ...headers, 'X-Slack-Request-Timestamp': '1531420619' }, body, then)).toBe('signature_invalid');
    expect(check(sig, { 'X-Slack-Signature': signature }, body, then)).toBe('signature_missing');
    expect(check(sig, { ...headers, 'X-Slack-Request-Timestamp': 'soon' }, body, then)).toBe('signature_missing');
  });
});

describe('standard-webhooks', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const sig: RouteSignature = { scheme: 'standard-webhooks', secrets: [{ value: secret }] };
  const body = JSON.stringify({ source: 'web-01', severity: 3 });
  const now = new Date();
  const signed = (wh: Webhook, id = 'msg_1') => ({
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': wh.sign(id, now, body),
  });

  it('verifies what the reference library signs', () => {
    expect(check(sig, signed(new Webhook(secret)), body, now.getTime())).toBe('ok');
  });

  it('refuses a tampered body, another id, a stale timestamp', () => {
    const headers = signed(new Webhook(secret));
    expect(check(sig, headers, `${body} `, now.getTime())).toBe('signature_invalid');
    expect(check(sig, { ...headers, 'webhook-id': 'msg_2' }, body, now.getTime())).toBe('signature_invalid');
    expect(check(sig, headers, body, now.getTime() + 301_000)).toBe('timestamp_out_of_range');
  });

  it('accepts either secret during a rotation: the sender lists both signatures', () => {
    const next = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
    const rotating: RouteSignature = {
      ...sig,
      secrets: [{ value: next }, { value: secret, notAfter: new Date(now.getTime() + 60_000).toISOString() }],
    };
    const both = signed(new Webhook(next));
    both['webhook-signature'] += ` ${signed(new Webhook(secret))['webhook-signature']}`;
    expect(check(rotating, both, body, now.getTime())).toBe('ok');
    // Only the old one, within the grace period: accepted; after it: refused.
    expect(check(rotating, signed(new Webhook(secret)), body, now.getTime())).toBe('ok');
    expect(
      check({ ...rotating, toleranceSeconds: 3600 }, signed(new Webhook(secret)), body, now.getTime() + 61_000),
    ).toBe('signature_invalid');
  });

  it('ignores signatures of other versions (v1a) and needs the id', () => {
    const headers = signed(new Webhook(secret));
    const v1 = headers['webhook-signature'].slice('v1,'.length);
    expect(check(sig, { ...headers, 'webhook-signature': `v1a,${v1}` }, body, now.getTime())).toBe('signature_invalid');
    const { ['webhook-id']: _id, ...withoutId } = headers;
    expect(check(sig, withoutId, body, now.getTime())).toBe('signature_missing');
  });
});

describe('grafana', () => {
  const secret = 'grafana-hmac-secret';
  const body = '{"receiver":"intake","status":"firing","alerts":[]}';

  it('verifies the body alone by default, hex in X-Grafana-Alerting-Signature', () => {
    const sig: RouteSignature = { scheme: 'grafana', secrets: [{ value: secret }] };
    const headers = { 'X-Grafana-Alerting-Signature': hmacHex('sha256', secret, body) };
    expect(check(sig, headers, body, 0)).toBe('ok');
    expect(check(sig, headers, body.replace('firing', 'resolved'), 0)).toBe('signature_invalid');
  });

  it('with a timestamp header, verifies `{timestamp}:{body}` and refuses a stale timestamp', () => {
    const sig: RouteSignature = {
      scheme: 'grafana',
      secrets: [{ value: secret }],
      header: 'X-My-Signature',
      timestampHeader: 'X-Grafana-Alerting-Timestamp',
    };
    const ts = '1767225600';
    const headers = {
      'X-My-Signature': hmacHex('sha256', secret, `${ts}:${body}`),
      'X-Grafana-Alerting-Timestamp': ts,
    };
    expect(check(sig, headers, body, Number(ts) * 1000)).toBe('ok');
    expect(check(sig, headers, body, Number(ts) * 1000 + 400_000)).toBe('timestamp_out_of_range');
    expect(check(sig, { 'X-My-Signature': headers['X-My-Signature'] }, body, 0)).toBe('signature_missing');
  });
});

describe('pagerduty', () => {
  const body = '{"event":{"id":"01DEN0V2VIFEN5871PQGX72URP","event_type":"incident.triggered"}}';
  const sig: RouteSignature = {
    scheme: 'pagerduty',
    secrets: [{ value: 'new-secret' }, { value: 'old-secret', notAfter: new Date(60_000).toISOString() }],
  };

  it('verifies a v1= signature from a comma-separated list, either secret within the grace period', () => {
    const list = `v1=${hmacHex('sha256', 'new-secret', body)},v1=${hmacHex('sha256', 'old-secret', body)}`;
    expect(check(sig, { 'X-PagerDuty-Signature': list }, body, 0)).toBe('ok');
    expect(check(sig, { 'X-PagerDuty-Signature': `v1=${hmacHex('sha256', 'old-secret', body)}` }, body, 0)).toBe('ok');
    expect(check(sig, { 'X-PagerDuty-Signature': `v1=${hmacHex('sha256', 'old-secret', body)}` }, body, 61_000)).toBe(
      'signature_invalid',
    );
  });
});

describe('hmac (generic)', () => {
  it('sha512, base64, a prefix, and a template of id, timestamp and body', () => {
    const sig: RouteSignature = {
      scheme: 'hmac',
      secrets: [{ value: 'generic-secret' }],
      header: 'X-Signature',
      timestampHeader: 'X-Timestamp',
      idHeader: 'X-Delivery',
      algorithm: 'sha512',
      encoding: 'base64',
      prefix: 'sha512=',
      signedContent: '{id}|{timestamp}|{body}',
    };
    const body = '{"source":"a","severity":1}';
    const mac = createHmac('sha512', 'generic-secret').update(`d-1|1767225600|${body}`).digest('base64');
    const headers = { 'X-Signature': `sha512=${mac}`, 'X-Timestamp': '1767225600', 'X-Delivery': 'd-1' };
    expect(check(sig, headers, body, 1767225600_000)).toBe('ok');
    expect(check(sig, { ...headers, 'X-Delivery': 'd-2' }, body, 1767225600_000)).toBe('signature_invalid');
    expect(check(sig, { ...headers, 'X-Signature': mac }, body, 1767225600_000)).toBe('signature_invalid');
  });

  it('defaults: sha256, hex, no prefix, the body alone', () => {
    const sig: RouteSignature = { scheme: 'hmac', secrets: [{ value: 's' }], header: 'X-Sig' };
    expect(check(sig, { 'x-sig': hmacHex('sha256', 's', 'abc') }, 'abc', 0)).toBe('ok');
  });
});

it('never accepts a secret outside its validity window (notBefore)', () => {
  const sig: RouteSignature = {
    scheme: 'github',
    secrets: [{ value: 'later', notBefore: new Date(10_000).toISOString() }],
  };
  const header = `sha256=${hmacHex('sha256', 'later', 'x')}`;
  expect(check(sig, { 'x-hub-signature-256': header }, 'x', 0)).toBe('signature_invalid');
  expect(check(sig, { 'x-hub-signature-256': header }, 'x', 10_000)).toBe('ok');
});

describe('signatureHeaders (api/signatures.ts): the sender side of this check', () => {
  const body = '{"source":"web-01","severity":"critical","description":"CPU above 95% \u00e9"}';
  const message = { id: 'console_0123', timestamp: 1767225600 };
  const now = message.timestamp * 1000 + 1000;
  const settings: Record<(typeof SIGNATURE_SCHEMES)[number], Omit<RouteSignature, 'secrets'>[]> = {
    'standard-webhooks': [{ scheme: 'standard-webhooks' }],
    github: [{ scheme: 'github' }],
    grafana: [
      { scheme: 'grafana' },
      { scheme: 'grafana', header: 'X-My-Signature', timestampHeader: 'X-Grafana-Alerting-Timestamp' },
    ],
    slack: [{ scheme: 'slack' }],
    pagerduty: [{ scheme: 'pagerduty' }],
    hmac: [
      { scheme: 'hmac', header: 'X-Sig' },
      {
        scheme: 'hmac',
        header: 'X-Signature',
        timestampHeader: 'X-Timestamp',
        idHeader: 'X-Delivery',
        algorithm: 'sha512',
        encoding: 'base64',
        prefix: 'sha512=',
        signedContent: '{id}|{timestamp}|{body}',
      },
    ],
  };

  it.each(SIGNATURE_SCHEMES.flatMap((scheme) => settings[scheme].map((s) => [scheme, s] as const)))(
    '%s: what it signs is accepted; another body, secret or (signed) timestamp is not',
    (_scheme, s) => {
      const secret = generateSigningSecret(s.scheme);
      const sig: RouteSignature = { ...s, secrets: [{ value: secret }] };
      const headers = signatureHeaders(ruleOf(s), secret, body, message);
      expect(check(sig, headers, body, now)).toBe('ok');
      expect(check(sig, headers, `${body} `, now)).toBe('signature_invalid');
      const other = signatureHeaders(ruleOf(s), generateSigningSecret(s.scheme), body, message);
      expect(check(sig, other, body, now)).toBe('signature_invalid');
      const rule = ruleOf(s);
      if (rule.timestampHeader) {
        const later = signatureHeaders(rule, secret, body, { ...message, timestamp: message.timestamp + 1 });
        expect(
          check(sig, { ...headers, [rule.timestampHeader]: later[rule.timestampHeader] as string }, body, now),
        ).toBe('signature_invalid');
      }
    },
  );

  it('standard-webhooks: the reference library verifies it', () => {
    const secret = generateSigningSecret('standard-webhooks');
    const headers = signatureHeaders(ruleOf({ scheme: 'standard-webhooks' }), secret, body, {
      id: 'msg_1',
      timestamp: Math.floor(Date.now() / 1000),
    });
    expect(Object.keys(headers).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it("github and slack: gives their documented examples' signatures", async () => {
    expect(
      signatureHeaders(ruleOf({ scheme: 'github' }), "It's a Secret to Everybody", 'Hello, World!', message),
    ).toEqual({ 'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17' });
    expect(signatureHeaders(ruleOf({ scheme: 'github' }), 'another secret', body, message)).toEqual({
      'x-hub-signature-256': await octokitSign('another secret', body),
    });
    const slackBody =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
    expect(
      signatureHeaders(ruleOf({ scheme: 'slack' }), '8f742231b10e8888abcd99yyyzzz85a5', slackBody, {
        id: '',
        timestamp: 1531420618,
      }),
    ).toEqual({
      'x-slack-signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
      'x-slack-request-timestamp': '1531420618',
    });
  });
});

describe('repeatableForMs: how long the seen-message memory keeps a message id', () => {
  const rule = ruleOf({ scheme: 'standard-webhooks', toleranceSeconds: 10 });
  const now = 1_800_000_000_000;
  const headers = (timestampS: number) => ({ signatures: 'v1,x', id: 'msg_1', timestamp: String(timestampS) });

  it('keeps a timestamp ahead of the clock until it leaves the window (up to twice the tolerance)', () => {
    const ms = repeatableForMs(rule, headers(now / 1000 + 9), now);
    expect(ms).toBeGreaterThanOrEqual(19_000);
    // Still accepted at its last moment, refused one millisecond later; the memory covers the first.
    expect(readSignedHeaders(rule, raw({ ...idAndTime('msg_1', now / 1000 + 9) }), now + 19_000)).not.toBe(
      'timestamp_out_of_range',
    );
    expect(readSignedHeaders(rule, raw({ ...idAndTime('msg_1', now / 1000 + 9) }), now + 19_001)).toBe(
      'timestamp_out_of_range',
    );
  });

  it('keeps an old timestamp only as long as it is still accepted', () => {
    const ms = repeatableForMs(rule, headers(now / 1000 - 9), now);
    expect(ms).toBeGreaterThanOrEqual(1000);
    expect(ms).toBeLessThan(10_000);
  });

  it('without a timestamp (an hmac id without one), the tolerance', () => {
    const hmac = ruleOf({ scheme: 'hmac', header: 'x-sig', idHeader: 'x-id', toleranceSeconds: 7 });
    expect(repeatableForMs(hmac, { signatures: 'x', id: 'a' }, now)).toBe(7000);
  });
});

const idAndTime = (id: string, timestampS: number): Record<string, string> => ({
  'webhook-id': id,
  'webhook-timestamp': String(timestampS),
  'webhook-signature': 'v1,AAAA',
});
