// Browser test of the HTML report against hostile strings (issue 19): every string of the
// sample results (tests/report/sample_results.json) -- names, algorithms, protocols, timeline
// tracks, serving layouts -- becomes markup that runs script if it is ever parsed as HTML. The
// page is written by `clustertwin report`, opened in Debian's chromium (playwright-core, never a
// downloaded browser), every chart's tooltip is shown for its data points, and the test asserts
// that no injected script ran (no window.__pwned, no dialog).
//
//   node tests/e2e/hostile_report_test.mjs --clustertwin build/dev/apps/clustertwin/clustertwin \
//        [--out build/e2e] [--chromium /usr/bin/chromium]
//
// Exit codes: 0 passed, 1 a check failed, 77 chromium is not installed (CTest: skip).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}
const bin = resolve(arg('clustertwin', join(repo, 'build/dev/apps/clustertwin/clustertwin')));
const outDir = resolve(arg('out', join(repo, 'build/e2e')));
const chromiumPath = arg('chromium', process.env.CHROMIUM ||
  ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p)));
if (!chromiumPath || !existsSync(chromiumPath)) {
  console.log('SKIP: Debian chromium not found (apt-get install -y chromium)');
  process.exit(77);
}
const { chromium } = createRequire(join(repo, 'web', 'package.json'))('playwright-core');

// Markup that runs script when parsed as HTML: an image whose load the page's CSP blocks (its
// error handler then fires) and an SVG with an onload handler; quotes and a closing tag too.
const PAYLOAD = `"'><img src=x onerror="window.__pwned=(window.__pwned||0)+1">` +
  `<svg onload="window.__pwned=(window.__pwned||0)+1"></svg></script><b>`;
function poison(v, key) {
  if (typeof v === 'string') return `${v}${PAYLOAD}`;
  if (Array.isArray(v)) return v.map((x) => poison(x, key));
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, poison(x, k)]));
  }
  return v;
}

mkdirSync(outDir, { recursive: true });
const sample = JSON.parse(readFileSync(join(repo, 'tests', 'report', 'sample_results.json'), 'utf8'));
const jsonPath = join(outDir, 'hostile.json');
const htmlPath = join(outDir, 'hostile.html');
writeFileSync(jsonPath, JSON.stringify(poison(sample), null, 1));
execFileSync(bin, ['--quiet', 'report', '--from', jsonPath, '--out', htmlPath], { stdio: 'inherit' });

let failed = 0;
const check = (ok, what) => { if (!ok) { failed++; console.log(`FAIL: ${what}`); } return ok; };
const userDataDir = mkdtempSync(join(tmpdir(), 'clustertwin-e2e-hostile-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: chromiumPath, headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
  viewport: { width: 1440, height: 900 },
});
try {
  const page = await context.newPage();
  const dialogs = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await page.goto(pathToFileURL(htmlPath).href, { waitUntil: 'load' });
  const ready = await page.waitForFunction(() => window.__reportReady === true, null, { timeout: 30000 })
    .then(() => true, () => false);
  check(ready, 'window.__reportReady never became true');
  // Every chart's tooltip, for up to 40 points of each series.
  const shown = await page.evaluate(async () => {
    let tips = 0;
    for (const el of document.querySelectorAll('[_echarts_instance_]')) {
      const inst = window.echarts.getInstanceByDom(el);
      if (!inst) continue;
      const series = inst.getOption().series || [];
      for (let s = 0; s < series.length; s++) {
        const n = Array.isArray(series[s].data) ? Math.min(series[s].data.length, 40) : 0;
        for (let i = 0; i < n; i++) {
          inst.dispatchAction({ type: 'showTip', seriesIndex: s, dataIndex: i });
          tips++;
          await new Promise((r) => setTimeout(r, 0));
        }
      }
      inst.dispatchAction({ type: 'hideTip' });
    }
    await new Promise((r) => setTimeout(r, 200));
    return tips;
  });
  check(shown > 20, `only ${shown} tooltips shown: the charts did not draw`);
  const pwned = await page.evaluate(() => window.__pwned || 0);
  check(pwned === 0, `injected script ran ${pwned} times`);
  check(dialogs.length === 0, `dialogs opened: ${dialogs.join('; ')}`);
  const injected = await page.evaluate(() => document.querySelectorAll('#report img, #report svg[onload]').length);
  check(injected === 0, `${injected} injected elements in the page`);
  console.log(`hostile report: ${shown} tooltips shown, injected script ran ${pwned} times`);
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
