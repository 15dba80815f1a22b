// The scaffolding the browser tests share: their command line, the clustertwin binary, Debian's
// chromium driven by playwright-core (pinned in web/package-lock.json; no tool downloads a
// browser), a throwaway browser profile, pages opened from file:// URLs with what went wrong on
// them collected, screenshots, and the pass/fail count that becomes the exit code.
//
// Every test takes --clustertwin BIN, --out DIR (reports and screenshots; default build/e2e) and
// --chromium PATH (default $CHROMIUM, /usr/bin/chromium or /usr/bin/chromium-browser).
// Exit codes: 0 all checks passed, 1 a check failed, 77 chromium is not installed (CTest: skip).
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';

/** The repository root (this file is tests/e2e/browser.mjs). */
export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The value after --name on the command line, or the fallback. */
export function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

/**
 * The test's setup: the binary (default `defaultBin` under the repository), the output folder
 * (created), chromium's path and playwright-core's `chromium`. Exits 77 without chromium and 1
 * without the binary or playwright-core, saying why.
 */
export function setup(defaultBin = 'build/dev/apps/clustertwin/clustertwin') {
  const bin = resolve(arg('clustertwin', join(repo, defaultBin)));
  const outDir = resolve(arg('out', join(repo, 'build/e2e')));
  const chromiumPath = arg('chromium', process.env.CHROMIUM ||
    ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p)));
  if (!chromiumPath || !existsSync(chromiumPath)) {
    console.log('SKIP: Debian chromium not found (apt-get install -y chromium); this test never downloads a browser');
    process.exit(77);
  }
  if (!existsSync(bin)) {
    console.error(`error: clustertwin binary not found at ${bin} (pass --clustertwin)`);
    process.exit(1);
  }
  let chromium;
  try {
    ({ chromium } = createRequire(join(repo, 'web', 'package.json'))('playwright-core'));
  } catch (e) {
    console.error('error: playwright-core is missing: run `npm ci --no-audit --no-fund` in web/ ' +
                  '(CMake configure does this when web/node_modules is missing)');
    process.exit(1);
  }
  mkdirSync(outDir, { recursive: true });
  return { bin, outDir, chromiumPath, chromium };
}

/** Counts checks; `check(ok, what)` prints FAIL: what when !ok and returns ok. */
export function checker() {
  const c = { passed: 0, failed: 0 };
  c.check = (ok, what) => {
    if (ok) {
      c.passed++;
    } else {
      c.failed++;
      console.log(`FAIL: ${what}`);
    }
    return ok;
  };
  /** Prints the count under `label` and exits 0, or 1 when a check failed. */
  c.finish = (label) => {
    console.log(`${label}: ${c.passed} checks passed, ${c.failed} failed`);
    process.exit(c.failed ? 1 : 0);
  };
  return c;
}

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage', '--font-render-hinting=none'];

/**
 * Runs `body(context)` in headless chromium with a fresh profile (1440 x 900, scale 1) and
 * always closes the browser and removes the profile afterwards.
 */
export async function withBrowser({ chromium, chromiumPath }, name, body) {
  const userDataDir = mkdtempSync(join(tmpdir(), `clustertwin-e2e-${name}-`));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath, headless: true, args: FLAGS,
    viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1,
  });
  try {
    return await body(context);
  } finally {
    await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
  }
}

/**
 * Opens `file` in a new page of `context` at `width` x `height` and returns { page, problems }:
 * problems collects console messages of the given types, page errors and every request whose
 * URL is not file:, data:, blob: or about: (a report must open offline). Dialogs are counted in
 * `dialogs` and dismissed. With `ready`, waits up to 30 s for window.__reportReady and records
 * a problem if it never comes.
 */
export async function openPage(context, file, { width = 1440, height = 900, console: types = ['error'],
                                                ready = false } = {}) {
  const page = await context.newPage();
  await page.setViewportSize({ width, height });
  const problems = [];
  const dialogs = [];
  page.on('console', (m) => { if (types.includes(m.type())) problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    if (!/^(file|data|blob|about):/.test(r.url())) problems.push(`network request: ${r.url()}`);
  });
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  if (ready) {
    const ok = await page.waitForFunction(() => window.__reportReady === true, null, { timeout: 30000 })
      .then(() => true, () => false);
    if (!ok) problems.push('window.__reportReady never became true');
  }
  return { page, problems, dialogs };
}

/** A full-page screenshot of `page` saved as `outDir/name.png`; returns its path. */
export async function screenshot(page, outDir, name) {
  const path = join(outDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
