/**
 * The built `intake console` as a process, and a real browser for it: Debian's chromium
 * (/usr/bin/chromium, `make tools` installs it) driven by playwright-core; Playwright's own browser
 * download is never used. Screenshots go to test-results/console/ (gitignored) for reviewers; the
 * pictures in docs/console.md are written by screenshotForDocs, when asked for.
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { ROOT } from '../../support/paths.js';
import { spawnIntake, untilAnswers } from '../../support/intake-process.js';
import { freePort } from '../../support/ports.js';
import { KUBECONFIG } from './cluster.js';

export const CHROMIUM = process.env.INTAKE_TEST_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOTS = resolve(ROOT, 'test-results/console');
/** Where docs/console.md's pictures are, and whether this run writes them (INTAKE_DOCS_SCREENSHOTS=1). */
export const DOCS_IMAGES = resolve(ROOT, 'docs/images');
export const WRITE_DOCS_SCREENSHOTS = process.env.INTAKE_DOCS_SCREENSHOTS === '1';

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

/**
 * docs/images/console-<name>.png, a picture docs/console.md shows, taken from the real console at
 * the point of a test where the page shows what the picture is for (after the test's own checks).
 * Written only when INTAKE_DOCS_SCREENSHOTS=1 (`make docs-screenshots`), so an ordinary run leaves
 * the tracked images alone (docs/console.md says why). `of`: that element only; `through`: the page
 * from its top down to that element's end; neither: the viewport.
 */
export async function screenshotForDocs(
  page: Page,
  name: string,
  where: { of?: Locator; through?: Locator } = {},
): Promise<void> {
  if (!WRITE_DOCS_SCREENSHOTS) return;
  mkdirSync(DOCS_IMAGES, { recursive: true });
  const path = resolve(DOCS_IMAGES, `console-${name}.png`);
  if (where.of) return void (await where.of.screenshot({ path, animations: 'disabled' }));
  const box = where.through && (await where.through.boundingBox());
  if (box) {
    const width = page.viewportSize()?.width ?? 1366;
    const scrollY = await page.evaluate(() => window.scrollY);
    const clip = { x: 0, y: 0, width, height: Math.ceil(box.y + scrollY + box.height + 16) };
    return void (await page.screenshot({ path, fullPage: true, clip, animations: 'disabled' }));
  }
  await page.screenshot({ path, animations: 'disabled' });
}
