// End-to-end test of the HTML report in a real browser: Debian's chromium, driven by
// playwright-core (pinned in web/package-lock.json). No tool may download a browser.
//
//   node tests/e2e/report_test.mjs --clustertwin build/report/apps/clustertwin/clustertwin \
//        [--out build/e2e] [--chromium /usr/bin/chromium]
//
// For two reports — tests/report/sample_results.json (every section, every chart type) and the
// real `describe azure-ndv6-gb300 --json` output (what the flagship report shows today), and
// the `schedule --json` and `goodput --json` of small runs (their own sections) — it
// writes the page with `clustertwin report`, opens it from a file:// URL and checks: no console
// error, no page error, no network request; the page says it is ready; every section of the JSON
// is there; every chart is an ECharts instance with a canvas, drawn elements and the data points
// the JSON holds. It saves a full-page screenshot of each (the CI artifact) in --out.
//
// Exit codes: 0 all checks passed, 1 a check failed, 77 chromium is not installed (CTest: skip).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { arg, checker, openPage, repo, screenshot, setup, withBrowser } from './browser.mjs';

const env = setup('build/report/apps/clustertwin/clustertwin');
const { bin, outDir } = env;
const { check, finish } = checker();

const sampleJson = join(repo, 'tests', 'report', 'sample_results.json');
function describe(cluster, name) {
  const path = join(outDir, `${name}.json`);
  execFileSync(bin, ['describe', cluster, '--json', path], { stdio: ['ignore', 'ignore', 'inherit'] });
  return path;
}

// The flagship run (plain `clustertwin`: cluster + training) as `run --json` writes it; ctest
// passes the results of the golden run (--flagship-json) so that the suite runs it once.
function flagship(name) {
  const given = arg('flagship-json', '');
  if (given && existsSync(given)) return resolve(given);
  const path = join(outDir, `${name}.json`);
  execFileSync(bin, ['run', '--json', path, '--no-report'], { stdio: ['ignore', 'ignore', 'inherit'] });
  return path;
}

// A cluster schedule (two placements, failures on) and one long training job under failures.
function schedule(name) {
  const path = join(outDir, `${name}.json`);
  execFileSync(bin, ['-q', 'schedule', '--cluster', 'gb300-nvl72*8', '--synthetic', 'llm:jobs=2000', '--days', '3',
    '--compare', 'block,first-fit', '--spares', '2', '--failure-scale', '20', '--json', path], { stdio: ['ignore', 'ignore', 'inherit'] });
  return path;
}
function goodput(name) {
  const path = join(outDir, `${name}.json`);
  execFileSync(bin, ['-q', 'goodput', '--cluster', 'gb300-nvl72*8', '--gpus', '256', '--spares', '2', '--model', 'llama3.1-70b', '--tp', '8',
    '--pp', '4', '--days', '30', '--failure-scale', '10', '--json', path], { stdio: ['ignore', 'ignore', 'inherit'] });
  return path;
}

// The sample and the flagship cluster get a picture per section; other fabric shapes (3 tiers,
// rail-optimised, a single rack with no fabric above its leaf) must draw without errors too.
const cases = [
  { name: 'sample', json: sampleJson, detail: true },
  { name: 'flagship', json: flagship('flagship'), detail: true },
  { name: 'describe', json: describe('azure-ndv6-gb300', 'describe'), detail: true },
  { name: 'meta-llama3-h100', json: describe('meta-llama3-h100', 'meta-llama3-h100') },
  { name: 'eos-dfw-h100', json: describe('eos-dfw-h100', 'eos-dfw-h100') },
  { name: 'one-rack', json: describe('gb300-nvl72*1', 'one-rack') },
  { name: 'schedule', json: schedule('schedule'), detail: true },
  { name: 'goodput', json: goodput('goodput'), detail: true },
];

await withBrowser(env, 'report', async (context) => {
  for (const c of cases) await runCase(context, c);
});

async function runCase(context, { name, json, detail }) {
  const html = join(outDir, `${name}.html`);
  execFileSync(bin, ['--quiet', 'report', '--from', json, '--out', html], { stdio: 'inherit' });
  const data = JSON.parse(readFileSync(json, 'utf8'));
  const results = data.counts && data.compute ? { cluster: data } : data;
  const size = statSync(html).size;
  check(size < 5e6, `${name}: report is ${size} bytes, over 5 MB`);

  const { page, problems } = await openPage(context, html, { console: ['error', 'warning'], ready: true });

  // Every section of the JSON is on the page, with content.
  const known = ['cluster', 'collectives', 'training', 'inference', 'power', 'schedule', 'goodput', 'warnings'];
  const expected = Object.keys(results).filter((k) => k !== 'meta' && k !== 'schema_version');
  const sections = await page.$$eval('section[data-section]', (els) =>
    els.map((e) => ({ key: e.dataset.section, cards: e.querySelectorAll('.card').length, h: e.getBoundingClientRect().height })));
  for (const key of expected) {
    const s = sections.find((x) => x.key === key);
    check(s && s.cards > 0 && s.h > 50, `${name}: section "${key}" missing or empty`);
    check(known.includes(key), `${name}: section "${key}" has no dedicated view (shown as raw JSON)`);
  }
  check(sections.length === expected.length, `${name}: ${sections.length} sections on the page, ${expected.length} in the JSON`);
  check(await page.$$eval('pre.error', (e) => e.length) === 0, `${name}: a section shows a rendering error`);

  // Every chart: an ECharts instance, a canvas with pixels, drawn elements, data points.
  const charts = await page.$$eval('[data-chart]', (els) => els.map((el) => {
    const inst = window.echarts.getInstanceByDom(el);
    if (!inst) return { id: el.dataset.chart, instance: false };
    const opt = inst.getOption();
    const series = (opt.series || []).map((s) => ({ type: s.type, name: s.name,
      data: Array.isArray(s.data) ? s.data.length : 0, links: Array.isArray(s.links) ? s.links.length : 0 }));
    const canvas = el.querySelector('canvas');
    let inked = 0;
    if (canvas) {
      const ctx = canvas.getContext('2d');
      const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
      for (let i = 3; i < data.length; i += 4 * 7) if (data[i] > 0) inked++;
    }
    // The value axes' ends as drawn (the CDFs must reach their limit lines, the timeline its step).
    const ends = (axis) => inst.getModel().getComponent(axis, 0);
    const xModel = ends('xAxis');
    const xExtent = xModel && xModel.axis && xModel.axis.scale ? xModel.axis.scale.getExtent() : null;
    // The x-axis labels as drawn (a linear time axis reads in one unit) and a limit line's label.
    const xType = xModel && xModel.axis ? xModel.axis.type : null;
    const xLabels = xType === 'value' ? xModel.axis.getViewLabels().map((l) => String(l.formattedLabel)) : [];
    const limitLabel = (opt.series || []).map((s) => s.markLine && s.markLine.label && s.markLine.label.formatter)
      .find((f) => typeof f === 'string') || null;
    return { id: el.dataset.chart, instance: true, canvas: !!canvas, inked, xExtent, xLabels, limitLabel,
             drawn: inst.getZr().storage.getDisplayList().length, series,
             width: el.clientWidth, height: el.clientHeight };
  }));
  const byId = Object.fromEntries(charts.map((c) => [c.id, c]));
  for (const c of charts) {
    check(c.instance, `${name}: chart ${c.id} has no ECharts instance`);
    if (!c.instance) continue;
    check(c.canvas && c.inked > 100, `${name}: chart ${c.id} has no drawn canvas (${c.inked} inked samples)`);
    check(c.drawn > 5, `${name}: chart ${c.id} drew only ${c.drawn} elements`);
    check(c.series.reduce((n, s) => n + s.data, 0) > 0, `${name}: chart ${c.id} has no data points`);
    check(c.width > 200 && c.height > 80, `${name}: chart ${c.id} is ${c.width}x${c.height}`);
  }
  // A time axis reads in one unit: never "90.0 s" beside "2.00 min" (log axes span decades and
  // may change unit).
  for (const c of charts) {
    const units = new Set((c.xLabels || []).map((l) => (/^-?[\d.,]+ (ns|µs|ms|s|min|h|days)$/.exec(l) || [])[1]).filter(Boolean));
    check(units.size <= 1, `${name}: chart ${c.id}'s time axis mixes units (${[...units].join(', ')}): ${(c.xLabels || []).join(' | ')}`);
  }
  const points = (id, pred = () => true) => (byId[id] ? byId[id].series.filter(pred).reduce((n, s) => n + s.data, 0) : -1);

  // Data points match the JSON, chart type by chart type.
  if (results.cluster) {
    const cl = results.cluster;
    const topo = byId['cluster/topology'];
    check(topo, `${name}: no topology drawing`);
    if (topo) {
      const g = topo.series.find((s) => s.type === 'graph');
      const rows = 1 + ((cl.scale_out && cl.scale_out.tier_detail) || []).filter((t) => t.switches > 0).length;
      check(g && g.data >= rows * 2, `${name}: topology graph has ${g && g.data} nodes for ${rows} rows`);
      check(!(cl.scale_out && cl.scale_out.tiers > 0) || (g && g.links > 0), `${name}: topology graph has no links`);
    }
    check(points('cluster/compute') === 2 * Object.keys(cl.compute || {}).length,
      `${name}: compute chart points ${points('cluster/compute')}`);
  }
  if (results.collectives) {
    const list = Array.isArray(results.collectives) ? results.collectives : [results.collectives];
    const want = list.reduce((n, e) => n + (e.rows || e.results).length, 0);
    const got = charts.filter((c) => c.id.startsWith('collectives/')).reduce((n, c) => n + c.series.reduce((m, s) => m + s.data, 0), 0);
    check(got === want, `${name}: collectives charts show ${got} points, the JSON has ${want}`);
  }
  if (results.training) {
    const t = results.training;
    // Every operation, plus at most two tail blocks (DP reduction, optimizer) per stage.
    const ops = points('training/timeline');
    const tails = 2 * (t.stages ? t.stages.length : 0);
    check(ops >= t.timeline.length && ops <= t.timeline.length + tails,
      `${name}: timeline shows ${ops} operations for ${t.timeline.length} in the JSON (+ up to ${tails} stage tails)`);
    const nonzero = Object.values(t.breakdown_s).filter((v) => v > 0).length;
    check(byId['training/breakdown'] && byId['training/breakdown'].series.length === nonzero,
      `${name}: step breakdown has ${byId['training/breakdown'] && byId['training/breakdown'].series.length} parts, the JSON ${nonzero}`);
    const mem = t.memory_per_gpu || t.memory;
    const terms = mem.stages ? null : Object.keys(mem).filter((k) => k.endsWith('_B') && !/^(capacity|total|usable)/.test(k)).length;
    check(terms === null || points('training/memory') === terms, `${name}: memory chart shows ${points('training/memory')} terms of ${terms}`);
    const tx = byId['training/timeline'].xExtent;
    check(tx && tx[1] >= t.step_time_s, `${name}: the timeline axis ends at ${tx && tx[1]} s, before the ${t.step_time_s} s step`);
    const types = new Set(byId['training/timeline'].series.map((s) => s.type));
    check(types.has('custom'), `${name}: timeline is not a custom (Gantt) series`);
  }
  // The per-point checks apply to the sample's layout; the serve verb's JSON (the flagship) is
  // checked by the section and console-error checks above.
  if (results.inference && Array.isArray(results.inference.points)) {
    const n = results.inference.points.length;
    for (const id of ['inference/interactivity', 'inference/ttft']) {
      check(points(id, (s) => s.type === 'scatter' && s.name !== 'chosen') === n, `${name}: ${id} shows ${points(id)} points of ${n}`);
      check(byId[id].series.some((s) => s.name === 'chosen' && s.data === 1), `${name}: ${id} does not mark the chosen layout`);
    }
  }
  // Latency CDFs: p50, p90, p99 and max of each latency the run reports, on an axis that reaches
  // the limit line (it once ended before a limit no request came near).
  for (const [key, id, lim, scale] of [['ttft_s', 'inference/ttft-cdf', 'ttft_limit_s', 1], ['tpot_s', 'inference/tpot-cdf', 'tpot_limit_s', 1e3]]) {
    const stats = results.inference && results.inference[key];
    if (stats && typeof stats === 'object') {
      check(points(id) === 4, `${name}: ${id} shows ${points(id)} of 4 percentiles`);
      const limit = results.inference[lim];
      const x = byId[id] && byId[id].xExtent;
      if (typeof limit === 'number') {
        check(x && x[1] >= limit * scale, `${name}: ${id} axis ends at ${x && x[1]}, before the limit ${limit * scale}`);
      }
    }
  }
  const gen = results.inference && results.inference.generation_ratio;
  if (gen && Array.isArray(gen.steps) && gen.steps.length >= 2) {
    check(byId['inference/generation'] !== undefined, `${name}: no waterfall for the generation comparison`);
    check(points('inference/generation', (s) => s.name === 'base') === gen.steps.length + 1,
      `${name}: the waterfall shows ${points('inference/generation', (s) => s.name === 'base')} bars of ${gen.steps.length + 1}`);
  }
  // Power: a waveform and its smoothed twin share a chart; every sample of every waveform is drawn.
  const powerCharts = (prefix, waves) => {
    const ids = charts.map((c) => c.id).filter((id) => id.startsWith(prefix) && /^\d+$/.test(id.slice(prefix.length)));
    const shown = ids.reduce((n, id) => n + points(id), 0);
    const want = waves.reduce((n, w) => n + w.t_s.length, 0);
    const twins = new Set(waves.map((w) => String(w.name).replace(/,? smoothed$/, ''))).size;
    check(shown === want, `${name}: ${prefix}* show ${shown} of ${want} samples`);
    check(ids.length === twins, `${name}: ${ids.length} power charts for ${twins} waveforms (smoothed twins together)`);
  };
  // The rack limit: the charts' line and the table say the same figures, the PSUs' usable DC
  // output and the same at their inputs (where the AC waveforms meet it).
  const rackLimit = async (section, prefix, p) => {
    if (!p || !(p.rack_limit_ac_W > 0) || !(p.systems_per_rack === 1)) return;
    const row = await page.$$eval(`section[data-section="${section}"] tr`, (rows) => rows
      .map((r) => [...r.querySelectorAll('td,th')].map((c) => c.textContent.trim()))
      .find((cells) => cells[0] === 'rack power limit'));
    check(row, `${name}: ${section}: no "rack power limit" row in the table`);
    const lines = charts.filter((c) => c.id.startsWith(prefix) && c.limitLabel && / DC /.test(c.limitLabel));
    check(lines.length > 0, `${name}: ${prefix}*: no chart draws the rack limit`);
    for (const c of lines) {
      const m = /^limit (.+ DC) \((.+) AC\)$/.exec(c.limitLabel);
      check(m && row && row[1].includes(m[1]) && row[1].includes(m[2]),
        `${name}: ${c.id} draws "${c.limitLabel}", the table says "${row && row[1]}"`);
    }
  };
  if (results.power) {
    powerCharts('power/', results.power.waveforms);
    await rackLimit('power', 'power/', results.power);
  }
  if (results.inference && results.inference.power) {
    const waves = results.inference.power.waveforms || [];
    check(waves.length > 0, `${name}: the serving power view has no waveforms`);
    powerCharts('inference/power/', waves);
    await rackLimit('inference', 'inference/power/', results.inference.power);
  }
  if (results.warnings) {
    const items = await page.$$eval('ul.warnings li', (e) => e.length);
    check(items === results.warnings.length, `${name}: ${items} warnings shown of ${results.warnings.length}`);
  }
  if (results.schedule) {
    const runs = results.schedule.runs;
    for (const id of ['schedule/utilization', 'schedule/queue', 'schedule/down', 'schedule/fragmentation']) {
      const want = runs.reduce((n, r) => n + r.timeline.t_h.length, 0);
      check(points(id) === want, `${name}: ${id} shows ${points(id)} samples of ${want}`);
    }
    const events = runs.reduce((n, r) => n + r.failure_log.length, 0);
    check(events > 0 && points('schedule/failures') === events, `${name}: failure timeline shows ${points('schedule/failures')} of ${events} events`);
    check(points('schedule/ettr') === 6 * runs.length, `${name}: ETTR breakdown shows ${points('schedule/ettr')} parts`);
    const rows = await page.$$eval('section[data-section="schedule"] table.data tbody tr', (e) => e.length);
    check(rows >= 15, `${name}: the comparison table has ${rows} rows`);
  }
  if (results.goodput) {
    const g = results.goodput;
    check(points('goodput/sweep') === 2 * g.interval_sweep.length, `${name}: interval sweep shows ${points('goodput/sweep')} points`);
    check(points('goodput/failures') === g.failure_log.length, `${name}: failure timeline shows ${points('goodput/failures')} of ${g.failure_log.length}`);
    check(points('goodput/ettr') === 6, `${name}: ETTR breakdown shows ${points('goodput/ettr')} parts`);
  }
  const header = await page.$eval('header h1', (e) => e.textContent);
  const title = results.cluster ? results.cluster.cluster.display_name
    : results.schedule ? results.schedule.runs[0].cluster : results.goodput ? results.goodput.model : '';
  check(header.includes(title), `${name}: header says "${header}"`);

  for (const p of problems) check(false, `${name}: ${p}`);
  const shot = await screenshot(page, outDir, name);
  // One picture per section too: the full page is tall, these are readable at 1:1.
  if (detail) {
    await page.addStyleTag({ content: '.toc { position: static !important; }' });  // not over the sections
    await page.locator('header.hero').screenshot({ path: join(outDir, `${name}-header.png`) });
    for (const s of sections) {
      await page.locator(`section[data-section="${s.key}"]`).screenshot({ path: join(outDir, `${name}-${s.key}.png`) });
    }
  }
  // The same page at a laptop's width (1280 px): the grid reflows, the charts redraw.
  if (detail) {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(outDir, `${name}-laptop.png`), fullPage: true });
    for (const s of sections) {
      await page.locator(`section[data-section="${s.key}"]`).screenshot({ path: join(outDir, `${name}-laptop-${s.key}.png`) });
    }
  }
  writeFileSync(join(outDir, `${name}.charts.json`), JSON.stringify(charts, null, 1));
  console.log(`${name}: ${charts.length} charts, ${sections.length} sections, ${(size / 1e6).toFixed(2)} MB -> ${shot}`);
  await page.close();
}

finish('report');
