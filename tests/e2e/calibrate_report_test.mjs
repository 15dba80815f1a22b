// End-to-end test of the `clustertwin calibrate --report` page in a real browser (Debian's
// chromium, driven by playwright-core pinned in web/package-lock.json; no tool downloads a
// browser). The page is static (inline SVG, no script): this checks what a reader sees.
//
//   node tests/e2e/calibrate_report_test.mjs --clustertwin build/dev/apps/clustertwin/clustertwin \
//        [--out build/e2e] [--chromium /usr/bin/chromium]
//
// Three calibrate runs on the test data of tests/validation/data/calibration: kernel tables (the
// H100 BF16 GEMM excerpt with its system spec), training step times (the DGX H100 405B step
// CSV) and serving results (the round-trip vLLM JSON with its setup). For each page: no console
// error, no page error, no network request, no script element; every fit section has its
// measured-vs-predicted chart(s), its residual histogram and its parameter (or grid) table, each
// SVG drawn with a non-empty box; at desktop (1440 px) and laptop (1280 x 800) widths nothing is
// wider than the window (wide tables scroll inside their own box). Full-page screenshots of each
// page at both widths go to --out (calibrate-<kind>-{desktop,laptop}.png).
//
// Exit codes: 0 all checks passed, 1 a check failed, 77 chromium is not installed (CTest: skip).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { checker, openPage, repo, screenshot, setup, withBrowser } from './browser.mjs';

const env = setup();
const { bin, outDir } = env;
const { check, finish } = checker();

const data = join(repo, 'tests', 'validation', 'data', 'calibration');
const runs = [
  {
    kind: 'kernels',
    args: ['--cluster', 'hgx-h100*1', join(data, 'aic_h100_gemm_bfloat16_excerpt.csv'),
           join(data, 'aic_h100_sxm_spec.yaml')],
    sections: ['Kernel tables on h100'],
    tables: ['Fitted grids'],
  },
  {
    kind: 'steps',
    args: ['--cluster', 'hgx-h100*128', join(data, 'dgx_h100_405b_step.csv')],
    sections: ['Training step times on h100'],
    tables: ['Parameters'],
  },
  {
    kind: 'serving',
    args: ['--cluster', 'hgx-h100*1', join(data, 'serving_roundtrip_setup.yaml'),
           join(data, 'serving_roundtrip_vllm.jsonl')],
    sections: ['Serving results on h100'],
    tables: ['Parameters'],
  },
];

await withBrowser(env, 'calibrate', async (context) => {
  for (const run of runs) {
    const html = join(outDir, `calibrate-${run.kind}.html`);
    execFileSync(bin, ['--quiet', 'calibrate', ...run.args, '--report', html],
                 { stdio: ['ignore', 'ignore', 'inherit'] });
    if (!check(existsSync(html), `calibrate ${run.kind} wrote no report`)) continue;
    for (const [width, height, name] of [[1440, 900, 'desktop'], [1280, 800, 'laptop']]) {
      const { page, problems } = await openPage(context, html, { width, height });
      const seen = await page.evaluate(() => {
        const heads = [...document.querySelectorAll('h2, h3')].map((h) => h.textContent);
        const svgs = [...document.querySelectorAll('svg')].map((s) => {
          const b = s.getBoundingClientRect();
          return { w: b.width, h: b.height, marks: s.querySelectorAll('circle, rect, polyline, line').length,
                   label: s.getAttribute('aria-label') || '' };
        });
        return {
          heads, svgs,
          scripts: document.querySelectorAll('script').length,
          scrollWidth: document.documentElement.scrollWidth,
          innerWidth: window.innerWidth,
          tables: document.querySelectorAll('table').length,
        };
      });
      const where = `${run.kind} at ${width} px`;
      check(problems.length === 0, `${where}: ${problems.join('; ')}`);
      check(seen.scripts === 0, `${where}: ${seen.scripts} script elements`);
      for (const s of run.sections) {
        check(seen.heads.some((h) => h.startsWith(s)), `${where}: no section '${s}'`);
      }
      for (const t of run.tables) {
        check(seen.heads.includes(t), `${where}: no '${t}' table heading`);
      }
      check(seen.heads.some((h) => h.startsWith('Residuals')), `${where}: no residual histogram heading`);
      check(seen.svgs.some((s) => s.label === 'residual histogram' && s.marks > 0),
            `${where}: no drawn residual histogram`);
      const charts = seen.svgs.filter((s) => s.label !== 'residual histogram');
      check(charts.length >= 1, `${where}: no measured-vs-predicted chart`);
      for (const s of seen.svgs) {
        check(s.w > 100 && s.h > 50 && s.marks > 0, `${where}: SVG '${s.label}' ${s.w}x${s.h} with ${s.marks} marks`);
      }
      check(seen.scrollWidth <= seen.innerWidth,
            `${where}: the page is ${seen.scrollWidth} px wide in a ${seen.innerWidth} px window`);
      const shot = await screenshot(page, outDir, `calibrate-${run.kind}-${name}`);
      console.log(`${where}: ${seen.svgs.length} charts, ${seen.tables} tables -> ${shot}`);
      await page.close();
    }
  }
});
finish('calibrate report');
