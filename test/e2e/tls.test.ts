/** TLS from certificate files, and a renewed certificate picked up without a restart. */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../support/waiting.js';
import { basic, DEMO, startIngester } from './support/ingester.js';

const dir = mkdtempSync(join(tmpdir(), 'intake-tls-'));

function makeCert(name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

function post(url: string, ca: string): Promise<{ status: number; cn: string }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ source: 's', severity: 1 });
    const req = request(
      url,
      {
        method: 'POST',
        ca: readFileSync(ca),
        agent: false,
        headers: { authorization: basic(DEMO.user, DEMO.password), 'content-type': 'application/json' },
      },
      (res) => {
        const cn = String(
          (res.socket as unknown as { getPeerCertificate(): { subject: { CN: string } } }).getPeerCertificate().subject
            .CN,
        );
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, cn }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

it('serves HTTPS and reloads a renewed certificate in place', async () => {
  const first = makeCert('first');
  const second = makeCert('second');
  const served = { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
  copyFileSync(first.cert, served.cert);
  copyFileSync(first.key, served.key);
  const ing = await startIngester((c) => (c.tls = { certFile: served.cert, keyFile: served.key }));
  try {
    const url = `${ing.url.replace('http:', 'https:')}/events/webhook_demo`;
    expect(await post(url, first.cert)).toEqual({ status: 200, cn: 'first' });
    copyFileSync(second.key, served.key);
    copyFileSync(second.cert, served.cert);
    await waitFor(
      'renewed certificate served',
      async () => (await post(url, second.cert).catch(() => ({ cn: '' }))).cn === 'second',
      10_000,
      100,
    );
    expect(ing.stderr()).toContain('TLS certificate reloaded');
  } finally {
    await ing.stop();
  }
});
