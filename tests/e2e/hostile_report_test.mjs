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
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { checker, openPage, repo, setup, withBrowser } from './browser.mjs';

const env = setup();
const { bin, outDir } = env;
const { check, finish } = checker();

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

const sample = JSON.parse(readFileSync(join(repo, 'tests', 'report', 'sample_results.json'), 'utf8'));
const jsonPath = join(outDir, 'hostile.json');
const htmlPath = join(outDir, 'hostile.html');
writeFileSync(jsonPath, JSON.stringify(poison(sample), null, 1));
execFileSync(bin, ['--quiet', 'report', '--from', jsonPath, '--out', htmlPath], { stdio: 'inherit' });

await withBrowser(env, 'hostile', async (context) => {
  const { page, problems, dialogs } = await openPage(context, htmlPath, { ready: true });
  check(!problems.includes('window.__reportReady never became true'), 'window.__reportReady never became true');
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
});
finish('hostile report');
