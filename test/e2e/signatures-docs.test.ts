/**
 * docs/signatures.md shows one curl per scheme, signing with openssl as the sender does: each runs
 * as shown against the built ingester with examples/signed.yaml, and is accepted; Slack's
 * url_verification example is answered with its challenge.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from '../support/paths.js';
import { startIngester, type RunningIngester } from './support/ingester.js';

const doc = readFileSync(join(ROOT, 'docs/signatures.md'), 'utf8');
const examples = doc.slice(doc.indexOf('## One example per scheme'));
const curls = [...examples.matchAll(/```sh\n([\s\S]*?)```/g)]
  .map((m) => m[1] as string)
  .filter((s) => s.includes('curl'));
const snippets = curls.filter((s) => !s.includes('url_verification'));
const slackUrlVerification = curls.filter((s) => s.includes('url_verification'));

let ing: RunningIngester;
beforeAll(async () => {
  const signed = parse(readFileSync(join(ROOT, 'examples/signed.yaml'), 'utf8')) as Record<string, unknown>;
  ing = await startIngester((c) => {
    for (const key of Object.keys(c)) delete c[key];
    Object.assign(c, signed);
  });
});
afterAll(async () => {
  await ing.stop();
});

it('has one example per scheme', () => {
  expect(snippets).toHaveLength(6);
});

it.each(snippets.map((s) => [/webhook_(\w+)/.exec(s)?.[1] as string, s]))(
  'the %s example is accepted as shown, and refused with its body changed',
  (_name, snippet) => {
    const script = snippet.replaceAll('http://127.0.0.1:8080', ing.url);
    const ok = spawnSync('bash', ['-c', script], { encoding: 'utf8', timeout: 20_000 });
    expect(ok.stderr).toBe('');
    expect(ok.stdout).toContain('"success":true');
    // The same signature, the body changed after signing (a space more: still the same JSON).
    const tampered = script.replace(/-d "\$BODY"\s*$/, '-d "$BODY "');
    expect(tampered).not.toBe(script);
    const refused = spawnSync('bash', ['-c', tampered], { encoding: 'utf8', timeout: 20_000 });
    expect(refused.stdout).toContain('"code":"UNAUTHORIZED"');
  },
);

it("Slack's url_verification example is answered with its challenge, and refused with its body changed", () => {
  expect(slackUrlVerification).toHaveLength(1);
  const script = (slackUrlVerification[0] as string).replaceAll('http://127.0.0.1:8080', ing.url);
  const ok = spawnSync('bash', ['-c', script], { encoding: 'utf8', timeout: 20_000 });
  expect(ok.stderr).toBe('');
  expect(JSON.parse(ok.stdout)).toEqual({ challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
  expect(doc).toContain(ok.stdout.trim());
  const tampered = script.replace(/-d "\$BODY"\s*$/, '-d "$BODY "');
  const refused = spawnSync('bash', ['-c', tampered], { encoding: 'utf8', timeout: 20_000 });
  expect(refused.stdout).toContain('"code":"UNAUTHORIZED"');
});
