/**
 * The built `intake console` as a process, and a real browser for it: Debian's chromium
 * (/usr/bin/chromium, `make tools` installs it) driven by playwright-core; Playwright's own browser
 * download is never used. Screenshots go to test-results/console/ (gitignored) for reviewers.
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from '../../support/paths.js';
import { spawnIntake, untilAnswers } from '../../support/intake-process.js';
import { freePort } from '../../support/ports.js';
import { KUBECONFIG } from './cluster.js';

export const CHROMIUM = process.env.INTAKE_TEST_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOTS = resolve(ROOT, 'test-results/console');

export interface ConsoleProc {
  /** Kubeconfig mode: the printed URL with its one-time token. Token mode: the base URL. */
  url: string;
  base: string;
  port: number;
  output: () => string;
  stop: () => Promise<void>;
}

export async function startConsole(extra: string[] = []): Promise<ConsoleProc> {
  const port = await freePort();
  const proc = spawnIntake(['console', '--kubeconfig', KUBECONFIG, '--listen', `127.0.0.1:${port}`, ...extra]);
  const url = await untilAnswers(
    proc,
    'console URL',
    async () => /(?:open|serving on) (http:\/\/\S+)/.exec(proc.output())?.[1],
    20_000,
    100,
  );
  return {
    url,
    base: `http://127.0.0.1:${port}`,
    port,
    output: proc.output,
    stop: async () => void (await proc.stop()),
  };
}

/**
 * Signs in to a kubeconfig-mode console as its page does: POST /api/login with the printed URL's
 * one-time token. Returns the headers every later API request needs: the session cookie and the
 * session secret (X-Intake-Session).
 */
export async function signInLocal(printedUrl: string): Promise<{ cookie: string; 'x-intake-session': string }> {
  const url = new URL(printedUrl);
  const res = await fetch(new URL('/api/login', url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: url.searchParams.get('token') }),
  });
  if (res.status !== 200) throw new Error(`sign-in: ${res.status} ${await res.text()}`);
  const { session } = (await res.json()) as { session: string };
  return { cookie: (res.headers.get('set-cookie') ?? '').split(';')[0] as string, 'x-intake-session': session };
}

export async function launchBrowser(): Promise<Browser> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    // Chromium's sandbox needs user namespaces a root CI container rarely grants.
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: resolve(SCREENSHOTS, `${name}.png`), fullPage: true });
}
