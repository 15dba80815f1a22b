// clustertwin HTML report: builds the page from the results JSON embedded in it
// (<script type="application/json" id="clustertwin-results">), with Apache ECharts (inlined
// before this script). Plain modern JS, no framework, no network: the C++ side
// (src/clustertwin/report/html.cpp) inlines this file at build time.
//
// Each top-level key has a section renderer; a section renders only when its key is present,
// and a renderer that throws shows its error in place without taking the page down (the browser
// test still fails on it: the error goes to the console). Unknown keys are shown as raw JSON.
// The JSON layout each section reads is documented in web/README.md.
//
// When every chart is drawn the page sets window.__reportReady = true (the browser test waits
// for it) and window.__reportCharts to [{id, section, points}] for each chart.
(function () {
  'use strict';

  // ------------------------------------------------------------------------------ formatting

  const PREFIXES = [[1e18, 'E'], [1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];

  /** 3 significant digits, like the CLI's tables ("23.0", "576", "1.08"). */
  function sig(v, digits = 3) {
    if (!Number.isFinite(v)) return String(v);
    if (v === 0) return '0';
    const a = Math.abs(v);
    if (a >= 10 ** digits) return Math.round(v).toLocaleString('en-US');
    const decimals = Math.max(0, digits - 1 - Math.floor(Math.log10(a)));
    return v.toFixed(Math.min(decimals, 6));
  }

  /** Decimal SI prefix: si(2.3e19, 'FLOP/s') = "23.0 EFLOP/s". */
  function si(v, unit) {
    if (!Number.isFinite(v)) return '–';
    const a = Math.abs(v);
    for (const [scale, p] of PREFIXES) {
      if (a >= scale) return `${sig(v / scale)} ${p}${unit}`;
    }
    return `${sig(v)} ${unit}`;
  }

  function seconds(v) {
    if (!Number.isFinite(v)) return '–';
    const a = Math.abs(v);
    if (a === 0) return '0 s';
    if (a < 1e-6) return `${sig(v * 1e9)} ns`;
    if (a < 1e-3) return `${sig(v * 1e6)} µs`;
    if (a < 1) return `${sig(v * 1e3)} ms`;
    if (a < 120) return `${sig(v)} s`;
    if (a < 7200) return `${sig(v / 60)} min`;
    if (a < 2 * 86400) return `${sig(v / 3600)} h`;
    return `${sig(v / 86400)} days`;
  }

  /** A formatter for a whole time axis in one unit, picked from its largest value `maxAbs` as
   *  seconds() picks it, so that no axis reads "90.0 s" beside "2.00 min"; ticks drop trailing
   *  zeros ("0", "30", "1.5"). */
  function secondsAxis(maxAbs) {
    const a = Math.abs(maxAbs);
    const [div, unit] = !(a > 0) ? [1, 's'] : a < 1e-6 ? [1e-9, 'ns'] : a < 1e-3 ? [1e-6, 'µs']
      : a < 1 ? [1e-3, 'ms'] : a < 120 ? [1, 's'] : a < 7200 ? [60, 'min'] : a < 2 * 86400 ? [3600, 'h'] : [86400, 'days'];
    return (v) => (Number.isFinite(v) ? `${v === 0 ? 0 : Number((v / div).toPrecision(3))} ${unit}` : '–');
  }

  /** Message sizes in binary units, as NCCL users read them: "64 KiB", "16 GiB". */
  function bsize(v) {
    if (!Number.isFinite(v)) return '–';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return `${Number.isInteger(v) ? v : sig(v)} ${units[i]}`;
  }

  const count = (v) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '–');
  const percent = (v) => `${sig(v * 100)} %`;
  /** Text from the results JSON made safe for HTML: ECharts renders tooltip formatters' strings
   *  as markup, so every data string that goes into one passes through here (issue 19). */
  const esc = (v) => String(v === undefined || v === null ? '' : v).replace(/[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

  /** A value formatted by the unit suffix of its key (DESIGN.md: units live in key names). */
  function byKey(key, v) {
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    if (typeof v !== 'number') return v === null || v === undefined ? '–' : String(v);
    const k = key.toLowerCase();
    if (k.endsWith('_flopps')) return si(v, 'FLOP/s');
    if (key.endsWith('_GBps')) return `${sig(v)} GB/s`;
    if (key.endsWith('_Gbps')) return `${sig(v)} Gb/s`;
    if (k.endsWith('_bps') && key.endsWith('_bps')) return si(v, 'b/s');
    if (k.endsWith('_bps')) return si(v, 'B/s');
    if (key.endsWith('_B')) return si(v, 'B');
    if (key.endsWith('_W')) return si(v, 'W');
    if (key.endsWith('_J')) return si(v, 'J');
    if (key.endsWith('_L_per_min')) return `${sig(v)} L/min`;
    if (key.endsWith('_C')) return `${sig(v)} °C`;
    if (k.endsWith('_us')) return seconds(v * 1e-6);
    if (k.endsWith('_ms')) return seconds(v * 1e-3);
    const perSecond = /(^|_)per_s(_|$)/.test(k);
    if (k.endsWith('_s') && !perSecond) return seconds(v);
    if (/(^|_)flops?(_|$)/.test(k) && !perSecond) return si(v, 'FLOP');
    if (perSecond) return Math.abs(v) >= 1e6 ? si(v, '') : `${sig(v)}`;
    if (k === 'mfu' || k.endsWith('_fraction') || k.endsWith('_ratio') || k.endsWith('_util')) {
      return percent(v);
    }
    // Beyond 10 digits a count reads better with a prefix ("1.17e20" as "117 E", not 21 digits).
    if (Math.abs(v) >= 1e10) return si(v, '');
    return Number.isInteger(v) ? count(v) : sig(v);
  }

  /** "step_time_s" -> "step time", "tokens_per_s_per_gpu" -> "tokens/s per GPU". */
  function label(key) {
    return key
      .replace(/_per_s_per_/g, '/s per ')
      .replace(/_per_s$/g, '/s')
      .replace(/_(FLOPps|GBps|Bps|bps|B|W|J|us|ms|s|C|L_per_min)$/, '')
      .replace(/_per_/g, ' per ')
      .replace(/_/g, ' ')
      .replace(/\btflops\b/g, 'TFLOP/s')
      .replace(/\bgpu\b/g, 'GPU')
      .replace(/\bgpus\b/g, 'GPUs')
      .replace(/\b(mfu|hbm|cpu|nic|ttft|tpot|kv|slo|tp|pp|dp|cp|ep|vpp|it|pue|tgp)\b/g, (m) => m.toUpperCase());
  }

  // ------------------------------------------------------------------------------------ DOM

  function h(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  /** A table: headers, then rows of cells; numeric-looking columns align right. */
  function table(headers, rows, opts = {}) {
    const numeric = headers.map((_, i) => i > 0 && !(opts.textColumns || []).includes(i));
    return h('div', { class: 'table-wrap' }, h('table', { class: 'data' },
      h('thead', {}, h('tr', {}, headers.map((t, i) => h('th', { class: numeric[i] ? 'num' : '' }, t)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c, i) => h('td', { class: numeric[i] ? 'num' : '' }, c)))))));
  }

  /** Two-column key/value table from an object's scalar fields. */
  function kvTable(obj, keys) {
    const rows = [];
    for (const k of keys || Object.keys(obj)) {
      const v = obj[k];
      if (v === undefined || (typeof v === 'object' && v !== null)) continue;
      rows.push([label(k), byKey(k, v)]);
    }
    return table(['', ''], rows);
  }

  /** One headline figure: "7.95 s" big, what it is, and a line under it. */
  function kpi(value, what, sub) {
    const m = /^([-0-9.,×\s]+?)\s*([A-Za-zµ/%]+(?: [A-Za-z/]+)?)$/.exec(value);
    const big = m ? [m[1], h('span', { class: 'kpi-unit' }, ` ${m[2]}`)] : [value];
    return h('div', { class: 'kpi' }, h('div', { class: 'kpi-value' }, big), h('div', { class: 'kpi-label' }, what),
      sub ? h('div', { class: 'kpi-sub' }, sub) : null);
  }

  /** The answer a section leads with (issue 18): its few figures in large type, before any chart
   *  or table. Entries are [value, what, sub]; missing figures ('–') are left out. */
  function answer(figs, title = null) {
    const items = figs.filter((f) => f && f[0] !== undefined && f[0] !== null && !String(f[0]).startsWith('–'));
    if (!items.length) return null;
    return card(title, h('div', { class: 'kpis answer' }, items.map(([v, w, sub]) => kpi(String(v), w, sub))),
      { full: true });
  }

  /** Every scalar figure of a result, folded away under the curated view. */
  function allFigures(obj, keys, what = 'All figures') {
    const ks = (keys || Object.keys(obj)).filter((k) => obj[k] !== undefined && (typeof obj[k] !== 'object' || obj[k] === null));
    if (!ks.length) return null;
    return h('details', { class: 'figures' }, h('summary', {}, `${what} (${ks.length})`), kvTable(obj, ks));
  }

  const num = (v) => typeof v === 'number' && Number.isFinite(v);
  /** The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten at or above v: an
   *  axis end that reads well. */
  function niceCeil(v) {
    if (!(v > 0)) return 1;
    const p = 10 ** Math.floor(Math.log10(v));
    for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v * (1 - 1e-9)) return m * p;
    return 10 * p;
  }

  function card(title, body, opts = {}) {
    return h('div', { class: `card${opts.wide ? ' wide' : ''}${opts.full ? ' full' : ''}` },
      title ? h('div', { class: 'card-head' }, h('h3', {}, title), opts.note ? h('span', { class: 'note' }, opts.note) : null) : null,
      body);
  }

  // --------------------------------------------------------------------------------- charts

  const PALETTE = ['#3867d6', '#f0932b', '#20bf6b', '#eb3b5a', '#8854d0', '#0fb9b1', '#f7b731',
                   '#a5b1c2', '#4b6584', '#fa8231'];
  const FONT = getComputedStyle(document.documentElement).getPropertyValue('--font').trim() || 'sans-serif';
  const charts = [];

  /** A chart container in a card; the option is set after the card is in the DOM. `option` may
   *  be a function of the container's width in pixels, called again when the width changes. */
  function chart(id, section, option, height = 340) {
    const el = h('div', { class: 'chart', 'data-chart': id, style: `height:${height}px` });
    charts.push({ el, id, section, option });
    return el;
  }

  function baseOption(extra) {
    return Object.assign({
      animation: false,
      color: PALETTE,
      textStyle: { fontFamily: FONT, color: '#2d3748' },
      grid: { left: 64, right: 24, top: 44, bottom: 48, containLabel: false },
      tooltip: { trigger: 'axis', confine: true, textStyle: { fontFamily: FONT } },
      legend: { top: 6, type: 'scroll', textStyle: { fontSize: 12 } },
    }, extra);
  }

  const axisName = (name, gap = 40) => ({ name, nameLocation: 'middle', nameGap: gap,
    nameTextStyle: { color: '#5a6473', fontSize: 12 } });

  function drawCharts() {
    const drawn = [];
    for (const c of charts) {
      const inst = echarts.init(c.el, null, { renderer: 'canvas' });
      const build = typeof c.option === 'function' ? c.option : null;
      let width = c.el.clientWidth;
      inst.setOption(build ? build(width) : c.option);
      const points = (inst.getOption().series || []).reduce(
        (n, s) => n + (Array.isArray(s.data) ? s.data.length : 0) +
                      (s.links ? s.links.length : 0), 0);
      drawn.push({ id: c.id, section: c.section, points });
      if (window.ResizeObserver) {
        new ResizeObserver(() => {
          if (build && Math.abs(c.el.clientWidth - width) > 40) {
            width = c.el.clientWidth;
            inst.setOption(build(width), true);
          }
          inst.resize();
        }).observe(c.el);
      }
    }
    return drawn;
  }

  // --------------------------------------------------------------------------------- header

  function header(d) {
    const c = d.cluster || {};
    const id = c.cluster || {};
    const kpis = [];
    const add = (value, what, sub) => kpis.push(kpi(value, what, sub));
    if (c.counts) {
      add(count(c.counts.gpus), 'GPUs', id.gpu ? id.gpu.toUpperCase() : null);
      add(`${count(c.counts.nvlink_domains)} × ${c.counts.nvlink_domain_gpus}`,
          id.system_kind === 'rack' ? 'NVLink racks' : 'NVLink domains', id.system || null);
    }
    if (c.compute) {
      const p = ['fp8', 'bf16', 'fp4'].find((k) => c.compute[k]);
      if (p) add(si(c.compute[p].dense_per_cluster_FLOPps, 'FLOP/s'), `${p.toUpperCase()} dense`, 'peak, whole cluster');
    }
    if (c.memory) add(si(c.memory.hbm_per_cluster_B, 'B'), 'HBM', `${si(c.memory.hbm_bandwidth_per_cluster_Bps, 'B/s')}`);
    if (c.scale_out && c.scale_out.tiers > 0) {
      add(si(c.scale_out.bisection_Bps, 'B/s'), 'bisection', `${c.scale_out.tiers}-tier ${id.scale_out_switch || ''}`.trim());
    }
    if (c.power) add(si(c.power.cluster_it_W, 'W'), 'IT power', 'nameplate');
    if (d.training && Number.isFinite(d.training.step_time_s)) {
      add(seconds(d.training.step_time_s), 'training step',
          Number.isFinite(d.training.mfu) ? `MFU ${percent(d.training.mfu)}` : d.training.model);
    }
    if (d.inference && Number.isFinite(d.inference.tokens_per_s_per_gpu)) {
      add(sig(d.inference.tokens_per_s_per_gpu), 'tokens/s per GPU', d.inference.model || 'serving');
    }
    const runs = d.schedule && Array.isArray(d.schedule.runs) ? d.schedule.runs : [];
    if (runs.length) {
      const r = runs[0];
      add(count(r.gpus), 'GPUs scheduled', `${sig(r.horizon_s / 86400)} days`);
      add(percent(r.utilization), 'GPU utilisation', runs.length > 1 ? `${r.placement} placement` : r.policy);
      if (r.ettr && r.ettr.wall_gpu_hours > 0) add(percent(r.ettr.ettr), 'ETTR', 'training jobs');
    }
    if (d.goodput && d.goodput.ettr_breakdown) {
      add(percent(d.goodput.ettr_breakdown.ettr), 'ETTR', `${d.goodput.model} on ${count(d.goodput.gpus)} GPUs`);
    }
    const title = id.display_name || id.name || (d.meta && d.meta.title) ||
      (runs.length ? `Schedule of ${runs[0].cluster}` : d.goodput ? `Goodput of ${d.goodput.model} on ${d.goodput.cluster}` : 'clustertwin results');
    return h('header', { class: 'hero' },
      h('div', { class: 'hero-inner' },
        h('div', { class: 'brand' }, h('span', { class: 'logo' }, '◆'), ' clustertwin',
          h('span', { class: 'brand-sub' }, ' · digital twin report'),
          d.meta && d.meta.sample ? h('span', { class: 'badge' }, 'sample data') : null),
        h('h1', {}, title),
        id.description ? h('p', { class: 'lede' }, id.description) : null,
        kpis.length ? h('div', { class: 'kpis' }, kpis) : null));
  }

  // ------------------------------------------------------------------------------- sections

  function clusterSection(c) {
    const id = c.cluster || {};
    const unit = id.system_kind === 'rack' ? 'rack' : 'domain';
    const cards = [];
    if (c.counts) {
      const n = c.counts;
      const rows = [
        ['systems', n.systems], ['racks', n.racks], ['nodes', n.nodes], ['GPUs', n.gpus],
        ['CPUs', n.cpus], ['CPU cores', n.cpu_cores], ['NICs', n.nics],
        ['NVLink domains', n.nvlink_domains], ['GPUs per NVLink domain', n.nvlink_domain_gpus],
        ['NVLink switch chips', n.nvlink_switch_chips], ['NVLink switch trays', n.nvlink_switch_trays],
        ['scale-out switches', n.scale_out_switches], ['scale-out cables', n.scale_out_cables],
        ['transceivers', n.transceivers],
      ].filter((r) => r[1] !== undefined && !(r[1] === 0 && /racks|trays/.test(r[0])));
      const parts = [id.gpu, id.cpu, id.nic, id.nvlink_switch, id.scale_out_switch, id.transceiver]
        .filter(Boolean).join(' · ');
      cards.push(card('Counts', table(['', ''], rows.map(([k, v]) => [k, count(v)])), { note: parts }));
    }
    if (c.compute) {
      const order = ['fp4', 'fp6', 'fp8', 'int8', 'bf16', 'fp16', 'tf32', 'fp32', 'fp64'];
      const precs = Object.keys(c.compute).sort((a, b) =>
        (order.indexOf(a) + 99 * (order.indexOf(a) < 0)) - (order.indexOf(b) + 99 * (order.indexOf(b) < 0)));
      const rows = [];
      for (const p of precs) {
        const e = c.compute[p];
        rows.push([`${p} dense`, si(e.dense_per_gpu_FLOPps, 'FLOP/s'), si(e.dense_per_domain_FLOPps, 'FLOP/s'),
                   si(e.dense_per_cluster_FLOPps, 'FLOP/s')]);
        if (e.sparse_per_gpu_FLOPps) {
          rows.push([`${p} sparse`, si(e.sparse_per_gpu_FLOPps, 'FLOP/s'), si(e.sparse_per_domain_FLOPps, 'FLOP/s'),
                     si(e.sparse_per_cluster_FLOPps, 'FLOP/s')]);
        }
      }
      cards.push(card('Compute (peak)', table(['', 'per GPU', `per ${unit}`, 'cluster'], rows)));
      cards.push(card('Peak compute per GPU', chart('cluster/compute', 'cluster', computeOption(c.compute, precs), 300)));
    }
    if (c.memory) {
      const m = c.memory;
      const rows = [
        ['HBM', si(m.hbm_per_gpu_B, 'B'), si(m.hbm_per_domain_B, 'B'), si(m.hbm_per_cluster_B, 'B')],
        ['HBM (usable)', si(m.hbm_usable_per_gpu_B, 'B'), '', ''],
        [`CPU memory (${si(m.cpu_memory_per_cpu_B, 'B')} per CPU)`, '', si(m.cpu_memory_per_domain_B, 'B'), si(m.cpu_memory_per_cluster_B, 'B')],
        ['fast memory', '', si(m.fast_memory_per_domain_B, 'B'), si(m.fast_memory_per_cluster_B, 'B')],
        ['HBM bandwidth', si(m.hbm_bandwidth_per_gpu_Bps, 'B/s'), si(m.hbm_bandwidth_per_domain_Bps, 'B/s'),
         si(m.hbm_bandwidth_per_cluster_Bps, 'B/s')],
      ];
      cards.push(card('Memory', table(['', 'per GPU', `per ${unit}`, 'cluster'], rows),
        { note: 'fast memory = usable HBM + CPU memory (coherent)' }));
    }
    if (c.nvlink || c.scale_out) {
      const rows = [];
      const nv = c.nvlink || {};
      const so = c.scale_out || {};
      if (c.nvlink) {
        rows.push(['NVLink, each direction', si(nv.per_gpu_Bps, 'B/s'), '']);
        rows.push(['NVLink, bidirectional', si(nv.per_gpu_bidir_Bps, 'B/s'), si(nv.per_domain_bidir_Bps, 'B/s')]);
        if (nv.in_network_reduction) rows.push(['NVLink in-switch reduction', nv.in_network_reduction, '']);
      }
      if (c.scale_out) {
        rows.push(['scale-out, each direction', `${si(so.per_gpu_bps, 'b/s')}`, si(so.per_domain_Bps, 'B/s')]);
        if (so.tiers > 0) {
          rows.push(['bisection, each way', '', si(so.bisection_Bps, 'B/s')]);
          rows.push(['oversubscription (down:up)', '', `${sig(so.oversubscription)}:1`]);
          rows.push(['fabric', '', `${so.tiers}-tier fat tree${so.planes > 1 ? `, ${so.planes} planes` : ''}${so.rail_optimized ? ', rail-optimised' : ''}`]);
        }
        if (so.in_network_reduction) rows.push(['scale-out in-network reduction', '', so.in_network_reduction]);
      }
      cards.push(card('Bandwidth', table(['', 'per GPU', `per ${unit} / fabric`], rows, { textColumns: [] })));
    }
    let tierTable = null;
    if (c.scale_out && Array.isArray(c.scale_out.tier_detail) && c.scale_out.tier_detail.length) {
      const rows = c.scale_out.tier_detail.map((t) => [t.tier, count(t.switches),
        count(t.ports_used), count(t.cables_up), t.uplink_capacity_Bps ? si(t.uplink_capacity_Bps, 'B/s') : '–',
        t.cables_up ? `${sig(t.oversubscription)}:1` : '–']);
      tierTable = table(['scale-out tier', 'switches', 'ports per switch', 'ports used', 'cables up', 'uplink capacity', 'down:up'],
        c.scale_out.tier_detail.map((t, i) => [rows[i][0], rows[i][1], count(t.ports_per_switch), ...rows[i].slice(2)]));
    }
    if (c.power) {
      const p = c.power;
      const rows = [
        ['GPU TGP per ' + unit, si(p.gpu_tgp_per_domain_W, 'W')],
        ['GPU TGP, cluster', si(p.gpu_tgp_per_cluster_W, 'W')],
        [(id.system_kind === 'rack' ? 'rack' : 'system') + ' nameplate', si(p.system_nameplate_W, 'W')],
        ['rack power limit', p.rack_power_limit_W ? `${si(p.rack_power_limit_W, 'W')} DC (power shelves)` : '–'],
        ['scale-out fabric', si(p.fabric_W, 'W')],
        ['IT load, cluster', si(p.cluster_it_W, 'W')],
      ];
      cards.push(card('Power (nameplate)', table(['', ''], rows)));
    }
    if (c.counts) {
      cards.unshift(card('Racks and fabric', h('div', {}, chart('cluster/topology', 'cluster', (w) => topologyOption(c, w), topologyHeight(c)),
        tierTable ? h('div', { class: 'tiers' }, tierTable) : null), { full: true, note: topologyNote(c) }));
    }
    return cards;
  }

  function computeOption(compute, precs) {
    return baseOption({
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' },
                 valueFormatter: (v) => si(v, 'FLOP/s') },
      grid: { left: 56, right: 24, top: 40, bottom: 36 },
      xAxis: { type: 'category', data: precs },
      yAxis: { type: 'log', min: 1e13, axisLabel: { formatter: (v) => si(v, 'FLOP/s') } },
      series: [
        { name: 'dense', type: 'bar', data: precs.map((p) => compute[p].dense_per_gpu_FLOPps),
          itemStyle: { borderRadius: [3, 3, 0, 0] } },
        { name: 'sparse', type: 'bar', data: precs.map((p) => compute[p].sparse_per_gpu_FLOPps || null),
          itemStyle: { borderRadius: [3, 3, 0, 0] } },
      ],
    });
  }

  function topologyNote(c) {
    const n = c.counts;
    const id = c.cluster || {};
    const tiers = (c.scale_out && c.scale_out.tier_detail) || [];
    const sw = tiers.map((t) => `${count(t.switches)} ${t.tier}`).join(' + ');
    const switches = tiers.reduce((a, t) => a + t.switches, 0);
    const one = n.nvlink_domains === 1;
    const what = id.system_kind === 'rack' ? (one ? 'rack' : 'racks') : (one ? 'NVLink domain' : 'NVLink domains');
    return `${count(n.nvlink_domains)} ${what} of ${n.nvlink_domain_gpus} GPUs` +
      (sw ? ` · ${sw} switch${switches === 1 ? '' : 'es'} · ${count(n.scale_out_cables)} cables` : ' · no scale-out fabric') +
      ' · schematic';
  }

  function topologyHeight(c) {
    return 190 + 100 * ((c.scale_out && c.scale_out.tier_detail) || []).filter((t) => t.switches > 0).length;
  }

  /** Indices to draw of a row of n items: all, or the first ones, a gap and the last. */
  function shownIndices(n, max) {
    if (n <= max) return { idx: [...Array(n).keys()], gapAfter: -1 };
    const idx = [...Array(max - 1).keys()];
    return { idx: idx.concat([n - 1]), gapAfter: max - 2 };
  }

  /** The racks and fabric tiers as an ECharts graph with fixed positions. */
  function topologyOption(c, widthPx) {
    const n = c.counts;
    const id = c.cluster || {};
    const so = c.scale_out || {};
    const tiers = (so.tier_detail || []).filter((t) => t.switches > 0);
    const kindName = id.system_kind === 'rack' ? 'rack' : 'node';
    // Coordinates are pixels of the series box (width minus 24 + 28 padding, height minus 64 + 40),
    // so the graph is drawn at scale 1 and symbol sizes are what they say at any width.
    const W = Math.max(300, (widthPx || 1200) - 52);
    const X0 = 130;  // row labels to the left of X0
    const top = (widthPx || 1200) < 640 ? 90 : 64;  // room for a legend on two lines
    const boxH = topologyHeight(c) - top - 40;
    // As many per row as fit at ~64 px each (4 to 16), the rest summarised.
    const maxRow = Math.max(4, Math.min(16, Math.floor(((widthPx || 1200) - 182) / 64)));
    const tierColors = ['#3867d6', '#8854d0', '#eb3b5a', '#f0932b'];
    const categories = [{ name: `${kindName} (NVLink domain)`, itemStyle: { color: '#20bf6b' } }]
      .concat(tiers.map((t, i) => ({ name: `${t.tier} switch`, itemStyle: { color: tierColors[i % 4] } })));
    const nodes = [];
    const links = [];
    const rows = [];  // per row: {count, shown: Map(index -> node name)}
    const rowY = (r) => (tiers.length ? (tiers.length - r) * boxH / tiers.length : boxH / 2);

    function addRow(r, total, make) {
      const { idx, gapAfter } = shownIndices(total, maxRow);
      const slots = idx.length + (gapAfter >= 0 ? 1 : 0);
      const shown = new Map();
      let slot = 0;
      idx.forEach((i, k) => {
        const x = X0 + (slot + 0.5) * (W - X0) / slots;
        const node = make(i, x, rowY(r));
        nodes.push(node);
        shown.set(i, node.name);
        slot++;
        if (k === gapAfter) {
          nodes.push({ name: `gap${r}`, x: X0 + (slot + 0.5) * (W - X0) / slots, y: rowY(r), symbol: 'rect', symbolSize: [1, 1],
                       category: r === 0 ? 0 : r, itemStyle: { color: 'rgba(0,0,0,0)' },
                       label: { show: true, position: 'inside', fontSize: 12, lineHeight: 15, color: '#5a6473',
                                formatter: `⋯\n${count(total - idx.length)}\nmore` },
                       tooltip: { formatter: `${count(total - idx.length)} more not drawn` } });
          slot++;
        }
      });
      rows.push({ total, shown });
    }

    const gpus = n.nvlink_domain_gpus;
    const slotPx = ((widthPx || 1200) - 182) / Math.min(n.nvlink_domains + 1, maxRow + 1);
    const domainW = Math.max(24, Math.min(54, slotPx * 0.8));
    addRow(0, n.nvlink_domains, (i, x, y) => ({
      name: `${kindName} ${i}`, x, y, category: 0, symbol: 'roundRect', symbolSize: [domainW, 58],
      itemStyle: { color: '#e6f7ee', borderColor: '#20bf6b', borderWidth: 1.5 },
      label: { show: true, position: 'inside', lineHeight: 14,
               formatter: `{n|${i}}\n{g|${gpus}}\n{u|GPU}`,
               rich: { n: { fontSize: 10, color: '#5a6473' }, g: { fontSize: 13, fontWeight: 'bold', color: '#1e7d4f' },
                       u: { fontSize: 9, color: '#1e7d4f' } } },
      value: gpus,
      tooltip: { formatter: `${esc(kindName)} ${i}: ${esc(gpus)} GPUs in one NVLink domain` },
    }));
    tiers.forEach((t, ti) => {
      addRow(ti + 1, t.switches, (i, x, y) => ({
        name: `${t.tier} ${i}`, x, y, category: ti + 1, symbol: 'rect', symbolSize: [Math.min(40, domainW), 16],
        label: { show: false },
        tooltip: { formatter: `${esc(t.tier)} switch ${i}<br>${esc(t.ports_per_switch)} ports` +
          `${t.cables_up ? `<br>down:up ${sig(t.oversubscription)}:1` : ''}` },
      }));
    });

    // Domains to leaves: each domain's NICs land on a block of leaves (its rail group when the
    // fabric is rail-optimised), spread evenly; upper tiers connect all to all (schematic).
    const lineStyle = (color, opacity) => ({ color, opacity, width: 1, curveness: 0 });
    if (tiers.length) {
      const D = n.nvlink_domains;
      const leaf = tiers[0];
      const L = leaf.switches;
      const nicsPerDomain = Math.max(1, Math.round(n.nics / D));
      const downPerLeaf = Math.max(1, Math.round((leaf.ports_used - leaf.cables_up) / L));
      const leavesOf = (i) => {
        if (so.rail_optimized && nicsPerDomain > 1) {
          const rails = Math.min(nicsPerDomain, L);
          const group = Math.floor(i / downPerLeaf);
          return [...Array(rails).keys()].map((r) => (group * rails + r) % L);
        }
        const a = Math.floor(i * L / D);
        const b = Math.max(a + 1, Math.floor((i + 1) * L / D));
        return [...Array(b - a).keys()].map((k) => a + k);
      };
      for (const [i, dn] of rows[0].shown) {
        for (const j of leavesOf(i)) {
          const ln = rows[1].shown.get(j);
          if (ln) links.push({ source: dn, target: ln, lineStyle: lineStyle('#20bf6b', 0.7) });
        }
      }
      for (let r = 1; r < tiers.length; ++r) {
        for (const [, lower] of rows[r].shown) {
          for (const [, upper] of rows[r + 1].shown) {
            links.push({ source: lower, target: upper, lineStyle: lineStyle(tierColors[(r - 1) % 4], 0.22) });
          }
        }
      }
    }
    // An invisible node at the right edge, so a short row is laid out at its place, not stretched.
    nodes.push({ name: 'frame', x: W, y: rowY(0), symbol: 'rect', symbolSize: [1, 1], itemStyle: { color: 'rgba(0,0,0,0)' },
                 category: 0, tooltip: { show: false }, label: { show: false } });
    // Row labels on the left, as label-only nodes so they stay aligned with their rows.
    const rowLabels = [[`${count(n.nvlink_domains)} ${kindName}${n.nvlink_domains === 1 ? '' : 's'}`, `${gpus} GPUs each`]].concat(
      tiers.map((t) => [`${count(t.switches)} ${t.tier}`, `${t.ports_per_switch}-port`]));
    rowLabels.forEach(([a, b], r) => nodes.push({
      name: `row${r}`, x: 0, y: rowY(r), symbol: 'rect', symbolSize: [1, 1], itemStyle: { color: 'rgba(0,0,0,0)' },
      category: r === 0 ? 0 : r, tooltip: { show: false },
      label: { show: true, position: 'right', formatter: `{a|${a}}\n{b|${b}}`,
               rich: { a: { fontSize: 12, fontWeight: 'bold', color: '#2d3748', lineHeight: 16 },
                       b: { fontSize: 11, color: '#5a6473', lineHeight: 14 } } },
    }));
    return {
      animation: false,
      textStyle: { fontFamily: FONT },
      tooltip: { trigger: 'item', confine: true },
      legend: { top: 4, data: categories.map((x) => x.name), textStyle: { fontSize: 12 } },
      series: [{
        type: 'graph', layout: 'none', roam: false, nodeScaleRatio: 0, categories, data: nodes, links,
        left: 24, right: 28, top, bottom: 40,
        emphasis: { focus: 'adjacency', lineStyle: { opacity: 0.9, width: 2 } },
        lineStyle: { opacity: 0.3 },
      }],
    };
  }

  /** One curve in one shape: {op, algo, gpus, scope, rows: [{size_B, busbw_GBps, time_us, algo,
   *  protocol}]}. Accepts that shape and the `collective --json` output ({op, ranks, cluster,
   *  algorithm_requested, results: [{size_bytes, busbw_GBps, time_us, algorithm, protocol}]}). */
  function collectiveCurve(e) {
    const rows = (e.rows || e.results || []).map((r) => ({
      size_B: r.size_B !== undefined ? r.size_B : r.size_bytes, busbw_GBps: r.busbw_GBps, time_us: r.time_us,
      algo: r.algo || r.algorithm, protocol: r.protocol })).filter((r) => Number.isFinite(r.size_B) && r.size_B > 0);
    let algo = e.algo || e.algorithm_requested || 'auto';
    if (algo === 'auto') algo = 'auto (NCCL choice)';
    return { op: e.op || 'collective', algo, gpus: e.gpus || e.ranks, scope: e.scope || e.cluster, rows };
  }

  function collectivesSection(value) {
    const list = (Array.isArray(value) ? value : [value]).filter((e) => e && typeof e === 'object').map(collectiveCurve);
    const groups = new Map();
    for (const e of list) {
      const key = `${e.op}|${e.gpus || ''}|${e.scope || ''}`;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(e);
    }
    const cards = [];
    let g = 0;
    for (const [, entries] of groups) {
      const e0 = entries[0];
      const title = `${String(e0.op).replace(/_/g, '-')}${e0.gpus ? ` on ${count(e0.gpus)} GPUs` : ''}`;
      const sizes = entries.flatMap((e) => e.rows.map((r) => r.size_B));
      const series = entries.map((e) => ({
        name: e.algo, type: 'line', showSymbol: true, symbolSize: 5, smooth: false,
        data: e.rows.map((r) => ({ value: [r.size_B, r.busbw_GBps], row: r })),
      }));
      const option = baseOption({
        tooltip: {
          trigger: 'axis',
          formatter: (ps) => {
            if (!ps.length) return '';
            const head = `<b>${bsize(ps[0].value[0])}</b>`;
            return head + ps.map((p) => `<br>${p.marker}${esc(p.seriesName)}: ${sig(p.value[1])} GB/s` +
              (p.data.row && p.data.row.time_us !== undefined ? ` · ${seconds(p.data.row.time_us * 1e-6)}` : '') +
              (p.data.row && p.data.row.algo && p.data.row.algo !== p.seriesName ? ` · ${esc(p.data.row.algo)}` : '') +
              (p.data.row && p.data.row.protocol ? ` · ${esc(p.data.row.protocol)}` : '')).join('');
          },
        },
        xAxis: Object.assign({ type: 'log', logBase: 2, min: Math.min(...sizes), max: Math.max(...sizes),
          splitNumber: 8, axisLabel: { formatter: (v) => bsize(v), hideOverlap: true },
          splitLine: { show: true, lineStyle: { color: '#f0f2f6' } } }, axisName('message size', 28)),
        yAxis: Object.assign({ type: 'value', axisLabel: { formatter: (v) => `${v}` } }, axisName('busbw (GB/s)', 44)),
        series,
      });
      const best = entries.map((e) => {
        const top = e.rows.reduce((a, r) => (r.busbw_GBps > a.busbw_GBps ? r : a), e.rows[0] || {});
        const how = [top.algo && top.algo !== e.algo ? top.algo : null, top.protocol].filter(Boolean).join(' / ');
        return [e.algo, `${sig(top.busbw_GBps)} GB/s`, bsize(top.size_B), how || '–'];
      });
      cards.push(card(title, h('div', {},
        chart(`collectives/${g++}`, 'collectives', option, 330),
        table(['algorithm', 'peak busbw', 'at size', 'protocol'], best, { textColumns: [3] })),
        { note: [e0.scope, 'busbw vs message size'].filter(Boolean).join(' · ') }));
    }
    return cards;
  }

  const KIND_COLORS = { forward: '#3867d6', backward: '#20bf6b', recompute: '#0fb9b1', weight_grad: '#45aaf2',
    dp_comm: '#f0932b', tp_comm: '#fa8231', pp_comm: '#f7b731', ep_comm: '#c44569', cp_comm: '#eb3b5a',
    optimizer: '#8854d0', bubble: '#d1d8e0', idle: '#d1d8e0' };
  const KIND_NAMES = { F: 'forward', B: 'backward', W: 'weight_grad', R: 'recompute' };

  /** Timeline operations in one shape: {track, name, kind, start_s, dur_s}. Accepts that shape
   *  and the execution layer's {stage, chunk, micro, kind: "F"|"B", start_s, end_s}. */
  function timelineOps(t) {
    const ops = (Array.isArray(t.timeline) ? t.timeline : []).map((e) => {
      const kind = KIND_NAMES[e.kind] || e.kind || 'other';
      const track = e.track !== undefined ? String(e.track) : `stage ${e.stage}`;
      const micro = e.micro !== undefined ? e.micro : e.microbatch;
      const name = e.name || `${(e.kind || '?')}${micro !== undefined ? micro : ''}${e.chunk ? `.${e.chunk}` : ''}`;
      const dur = e.dur_s !== undefined ? e.dur_s : e.end_s - e.start_s;
      return { track, name, kind, start_s: e.start_s, dur_s: dur, micro, chunk: e.chunk };
    });
    // The stage tails (exposed data-parallel reduction, optimizer) when the timeline reaches them,
    // or when it holds only the first micro-batches (timelineCut): the tails are exact figures of
    // each stage, drawn at its pipeline end past the band of micro-batches not drawn.
    const cut = timelineCut(t, ops);
    if (Array.isArray(t.stages)) {
      for (const s of t.stages) {
        const track = `stage ${s.stage}`;
        const last = Math.max(...ops.filter((o) => o.track === track).map((o) => o.start_s + o.dur_s));
        if (!Number.isFinite(last) || !Number.isFinite(s.pipeline_end_s)) continue;
        if (!cut && Math.abs(last - s.pipeline_end_s) > 1e-3 * Math.max(1e-9, s.pipeline_end_s)) continue;
        if (s.dp_exposed_s > 0) ops.push({ track, name: 'DP reduce (exposed)', kind: 'dp_comm', start_s: s.pipeline_end_s, dur_s: s.dp_exposed_s });
        if (s.optimizer_s > 0) ops.push({ track, name: 'optimizer', kind: 'optimizer', start_s: s.pipeline_end_s + (s.dp_exposed_s || 0), dur_s: s.optimizer_s });
      }
    }
    return ops.filter((o) => Number.isFinite(o.start_s) && Number.isFinite(o.dur_s));
  }

  /** The timeline JSON holds the first micro-batches of a step only (report::training_json keeps
   *  2 pp + 2 of them): {shown, all, from_s, to_s} when micro-batches are missing — the band from
   *  the last drawn operation to the first stage's pipeline end — else null. */
  function timelineCut(t, ops) {
    const all = t.layout && num(t.layout.micro_batches) ? t.layout.micro_batches : null;
    const micros = ops.map((o) => o.micro).filter(num);
    if (!all || !micros.length) return null;
    const shown = Math.max(...micros) + 1;
    if (shown >= all) return null;
    const ends = (Array.isArray(t.stages) ? t.stages : []).map((s) => s.pipeline_end_s).filter(num);
    const from = Math.max(...ops.filter((o) => num(o.micro)).map((o) => o.start_s + o.dur_s));
    const to = ends.length ? Math.min(...ends) : null;
    return { shown, all, from_s: from, to_s: to !== null && to > from ? to : null };
  }

  /** Rows of objects as a table (columns: the union of scalar keys, in first-seen order). */
  function objectsTable(list, first = []) {
    const cols = first.filter((k) => list.some((o) => o[k] !== undefined));
    for (const o of list) for (const k of Object.keys(o)) if (typeof o[k] !== 'object' && !cols.includes(k)) cols.push(k);
    return table(cols.map(label), list.map((o) => cols.map((k) => byKey(k, o[k]))));
  }

  function trainingSection(t, data) {
    const cards = [];
    const mem = t.memory_per_gpu || t.memory || {};
    const memTotal = num(mem.total_B) ? mem.total_B : null;
    const memCap = mem.capacity_per_gpu_B || mem.capacity_B ||
      (data && data.cluster && data.cluster.memory && data.cluster.memory.hbm_usable_per_gpu_B);
    cards.push(answer([
      num(t.time_to_train_s) ? [seconds(t.time_to_train_s), 'time to train',
        num(t.token_budget) ? `${si(t.token_budget, '')} tokens` : null] : null,
      num(t.step_time_s) ? [seconds(t.step_time_s), 'step time',
        num(t.tokens_per_step) ? `${si(t.tokens_per_step, '')} tokens per step` : null] : null,
      num(t.tokens_per_s_per_gpu) ? [sig(t.tokens_per_s_per_gpu), 'tokens/s per GPU',
        num(t.tokens_per_s) ? `${si(t.tokens_per_s, '')} tokens/s in all` : null] : null,
      num(t.mfu) ? [percent(t.mfu), 'MFU', num(t.model_tflops_per_gpu) ? `${sig(t.model_tflops_per_gpu)} model TFLOP/s per GPU` : null] : null,
      memTotal ? [si(memTotal, 'B'), 'memory per GPU', memCap ? `of ${si(memCap, 'B')} usable` : null] : null,
    ]));
    const facts = h('div', {});
    if (t.layout && typeof t.layout === 'object') {
      const order = ['tp', 'pp', 'vpp', 'dp', 'cp', 'ep', 'zero', 'micro_batch', 'micro_batches', 'global_batch', 'seq_len', 'precision', 'recompute'];
      const rank = (k) => (order.includes(k) ? order.indexOf(k) : order.length);
      const entries = Object.entries(t.layout).filter(([k, v]) => k !== 'summary' && v !== false && typeof v !== 'object')
        .sort((a, b) => rank(a[0]) - rank(b[0]));
      if (t.layout.summary) facts.append(h('div', { class: 'summary' }, String(t.layout.summary)));
      facts.append(h('div', { class: 'chips' }, entries.map(([k, v]) =>
        h('span', { class: 'chip' }, h('b', {}, label(k)), v === true ? '' : ` ${byKey(k, v)}`))));
    }
    // The set-up in a few lines; every figure stays one click away.
    const setup = ['model', 'cluster', 'gpu', 'gpus', 'precision', 'tokens_per_step', 'model_flops_per_step', 'hardware_tflops_per_gpu']
      .filter((k) => t[k] !== undefined && typeof t[k] !== 'object');
    facts.append(kvTable(t, setup));
    if (Array.isArray(t.notes) && t.notes.length) facts.append(h('ul', { class: 'notes' }, t.notes.map((n) => h('li', {}, String(n)))));
    facts.append(allFigures(t));
    cards.push(card(`Layout${t.model ? `: ${t.model}` : ''}`, facts));

    if (t.breakdown_s && typeof t.breakdown_s === 'object') {
      // Where the time goes, in the order a step runs: compute, communication, bubble, optimizer.
      const rankOf = (k) => (/forward/.test(k) ? 0 : /backward/.test(k) ? 1 : /recompute/.test(k) ? 2 : /compute|gemm/.test(k) ? 3
        : /comm|collective|p2p|send/.test(k) ? 4 : /bubble|idle|wait/.test(k) ? 5 : /optim/.test(k) ? 6 : 7);
      const entries = Object.entries(t.breakdown_s).filter(([, v]) => Number.isFinite(v) && v > 0)
        .sort((a, b) => rankOf(a[0]) - rankOf(b[0]));
      const commColors = ['#f0932b', '#eb3b5a', '#f7b731', '#fa8231', '#c44569'];
      let comm = 0;
      const colorOf = entries.map(([k], i) => (/forward/.test(k) ? KIND_COLORS.forward : /backward/.test(k) ? KIND_COLORS.backward
        : /recompute/.test(k) ? KIND_COLORS.recompute : /compute|gemm/.test(k) ? '#3867d6'
        : /comm|collective|p2p|send/.test(k) ? commColors[comm++ % commColors.length] : /bubble|idle|wait/.test(k) ? '#a5b1c2'
        : /optim/.test(k) ? KIND_COLORS.optimizer : PALETTE[(i + 5) % PALETTE.length]));
      const total = entries.reduce((a, [, v]) => a + v, 0);
      const option = baseOption({
        tooltip: { trigger: 'item', formatter: (p) => `${p.marker}${esc(p.seriesName)}: ${seconds(p.value)} (${sig(100 * p.value / total)} %)` },
        legend: { show: false },
        grid: { left: 8, right: 16, top: 8, bottom: 28, containLabel: true },
        xAxis: { type: 'value', axisLabel: { formatter: secondsAxis(total) } },
        yAxis: { type: 'category', data: ['step'], axisLabel: { show: false }, axisTick: { show: false } },
        series: entries.map(([k, v], i) => ({
          name: label(k), type: 'bar', stack: 'step', barWidth: 46, data: [v],
          itemStyle: { color: colorOf[i] },
          label: { show: v / total > 0.06, formatter: () => `${sig(100 * v / total, 2)}%`, color: '#fff', fontWeight: 'bold' },
        })),
      });
      const rows = entries.map(([k, v], i) => [
        h('span', {}, h('i', { class: 'swatch', style: `background:${colorOf[i]}` }), label(k)),
        seconds(v), `${sig(100 * v / total)} %`]);
      cards.push(card('Step breakdown', h('div', {}, chart('training/breakdown', 'training', option, 120),
        table(['', 'time', 'share'], rows)), { note: `total ${seconds(total)}` }));
    }

    // Memory: {stages: [{stage, <term>_B...}], capacity_per_gpu_B} or one GPU's flat {<term>_B...}.
    const m = t.memory || t.memory_per_gpu;
    if (m && typeof m === 'object') {
      const stages = Array.isArray(m.stages) ? m.stages
        : [Object.assign({}, m, { stage: m.stage !== undefined ? `stage ${m.stage}` : 'per GPU' })];
      const skip = (k) => /^(capacity|total|usable)/.test(k);
      const comps = [];
      for (const s of stages) for (const k of Object.keys(s)) if (k.endsWith('_B') && !skip(k) && !comps.includes(k)) comps.push(k);
      const memOrder = ['weights_B', 'params_B', 'gradients_B', 'grads_B', 'optimizer_B', 'activations_B'];
      const mrank = (k) => (memOrder.includes(k) ? memOrder.indexOf(k) : memOrder.length);
      comps.sort((a, b) => mrank(a) - mrank(b));
      const cap = m.capacity_per_gpu_B || m.capacity_B ||
        (data && data.cluster && data.cluster.memory && data.cluster.memory.hbm_usable_per_gpu_B);
      const option = baseOption({
        tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, valueFormatter: (v) => si(v, 'B') },
        legend: { type: 'plain', bottom: 0, textStyle: { fontSize: 12 } },
        grid: { left: 64, right: 24, top: 20, bottom: 84 },
        xAxis: Object.assign({ type: 'category', data: stages.map((s) => String(s.stage).replace(/^stage /, stages.length > 1 ? '' : 'stage ')),
          axisLabel: { hideOverlap: true } }, axisName(stages.length > 1 ? 'pipeline stage' : '', 26)),
        yAxis: { type: 'value', max: cap ? (v) => Math.max(v.max, cap) * 1.05 : null,
                 axisLabel: { formatter: (v) => si(v, 'B'), showMaxLabel: !cap } },
        series: comps.map((k, i) => ({
          name: label(k), type: 'bar', stack: 'mem', barMaxWidth: 90, data: stages.map((s) => s[k] || 0),
          itemStyle: { color: PALETTE[i % PALETTE.length] },
          markLine: i === 0 && cap ? { symbol: 'none', silent: true, lineStyle: { color: '#eb3b5a', type: 'dashed', width: 1.5 },
            label: { formatter: `usable HBM ${si(cap, 'B')}`, position: 'insideEndTop', color: '#eb3b5a' },
            data: [{ yAxis: cap }] } : undefined,
        })),
      });
      const totals = stages.map((s) => comps.reduce((a, k) => a + (s[k] || 0), 0));
      cards.push(card('Memory per GPU', chart('training/memory', 'training', option, 360),
        { note: stages.length > 1 ? 'by pipeline stage' : `total ${si(Math.max(...totals), 'B')}${cap ? ` of ${si(cap, 'B')}` : ''}` }));
    }

    const ops = timelineOps(t);
    if (ops.length) {
      const tracks = [];
      for (const e of ops) if (!tracks.includes(e.track)) tracks.push(e.track);
      tracks.sort((a, b) => (parseInt(a.replace(/\D+/g, ''), 10) || 0) - (parseInt(b.replace(/\D+/g, ''), 10) || 0));
      const kinds = [];
      for (const e of ops) if (!kinds.includes(e.kind)) kinds.push(e.kind);
      const series = kinds.map((kind, ki) => ({
        name: label(kind), type: 'custom', encode: { x: [1, 2], y: 0 },
        itemStyle: { color: KIND_COLORS[kind] || PALETTE[ki % PALETTE.length] },
        renderItem: (params, api) => {
          const y = api.value(0);
          const start = api.coord([api.value(1), y]);
          const end = api.coord([api.value(2), y]);
          const height = api.size([0, 1])[1] * 0.68;
          const rect = echarts.graphic.clipRectByRect(
            { x: start[0], y: start[1] - height / 2, width: Math.max(end[0] - start[0], 0.5), height },
            { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
          return rect && { type: 'rect', transition: [], shape: rect, style: api.style({ stroke: '#fff', lineWidth: 0.5 }) };
        },
        data: ops.filter((e) => e.kind === kind).map((e) => ({
          value: [tracks.indexOf(e.track), e.start_s, e.start_s + e.dur_s, e.name], e })),
      }));
      // The axis spans the whole step; micro-batches the JSON does not hold are a grey band
      // that says so, so a 12 s step does not read as a 5 s one.
      const cut = timelineCut(t, ops);
      const end = Math.max(num(t.step_time_s) ? t.step_time_s : 0, ...ops.map((o) => o.start_s + o.dur_s));
      if (cut && cut.to_s !== null && series.length) {
        series[0].markArea = { silent: true, itemStyle: { color: 'rgba(165,177,194,0.18)' },
          label: { show: true, position: 'inside', color: '#5a6473', fontSize: 12, lineHeight: 17,
                   formatter: `micro-batches ${cut.shown + 1}–${cut.all}\n(same pattern, not drawn)` },
          data: [[{ xAxis: cut.from_s }, { xAxis: cut.to_s }]] };
      }
      const option = baseOption({
        tooltip: { trigger: 'item', formatter: (p) => `${p.marker}<b>${esc(p.data.e.name)}</b> on ${esc(p.data.e.track)}` +
          `<br>${esc(label(String(p.data.e.kind || '')))} · start ${seconds(p.data.e.start_s)} · ${seconds(p.data.e.dur_s)}` },
        grid: { left: 72, right: 24, top: 40, bottom: 64 },
        dataZoom: [{ type: 'inside', filterMode: 'weakFilter' }, { type: 'slider', height: 16, bottom: 10, filterMode: 'weakFilter' }],
        xAxis: Object.assign({ type: 'value', min: 0, max: niceCeil(end), axisLabel: { formatter: secondsAxis(niceCeil(end)) } },
          axisName('time in step', 26)),
        yAxis: { type: 'category', data: tracks, inverse: true, axisTick: { show: false } },
        series,
      });
      const drawn = cut ? `first ${cut.shown} of ${cut.all} micro-batches drawn · ` : '';
      cards.push(card('Per-stage timeline', chart('training/timeline', 'training', option, Math.max(220, 110 + tracks.length * 26)),
        { full: true, note: `${drawn}${ops.length} operations on ${tracks.length} tracks · scroll to zoom` }));
    }

    if (Array.isArray(t.stages) && t.stages.length && typeof t.stages[0] === 'object') {
      cards.push(card('Pipeline stages', objectsTable(t.stages, ['stage', 'layers', 'busy_s', 'pipeline_end_s', 'dp_exposed_s', 'optimizer_s', 'end_s']), { full: t.stages.length > 0 }));
    }
    return cards;
  }

  function inferenceSection(inf) {
    const cards = [];
    const pts = Array.isArray(inf.points) ? inf.points : [];
    const chosen = inf.chosen;
    const lim = (v, limit) => (num(limit) ? `limit ${seconds(limit)}${num(v) && v > limit ? ' · missed' : ''}` : null);
    cards.push(answer([
      num(inf.tokens_per_s_per_gpu) ? [sig(inf.tokens_per_s_per_gpu), 'tokens/s per GPU',
        num(inf.tokens_per_s) ? `${si(inf.tokens_per_s, '')} tokens/s on ${count(inf.gpus)} GPUs` : null] : null,
      num(inf.tokens_per_s_per_user) ? [sig(inf.tokens_per_s_per_user), 'tokens/s per user', 'interactivity'] : null,
      num(inf.ttft_p99_s) ? [seconds(inf.ttft_p99_s), 'TTFT p99', lim(inf.ttft_p99_s, inf.ttft_limit_s)] : null,
      num(inf.tpot_p99_s) ? [seconds(inf.tpot_p99_s), 'TPOT p99', lim(inf.tpot_p99_s, inf.tpot_limit_s)] : null,
      num(inf.rate_qps) ? [sig(inf.rate_qps), 'requests/s', inf.scenario ? `${inf.scenario} scenario` : null] : null,
      inf.generation_ratio && num(inf.generation_ratio.ratio)
        ? [`×${sig(inf.generation_ratio.ratio)}`, 'per GPU vs the baseline', inf.generation_ratio.baseline || null] : null,
    ]));
    const setup = ['model', 'cluster', 'gpu', 'gpus', 'precision', 'scenario', 'layout', 'requests', 'duration_s']
      .filter((k) => inf[k] !== undefined && typeof inf[k] !== 'object');
    cards.push(card(`Serving${inf.model ? `: ${inf.model}` : ''}`, h('div', {}, kvTable(inf, setup),
      chosen ? h('h4', {}, 'Chosen layout', h('span', { class: 'note' }, ` ${chosen.layout || ''}`)) : null,
      chosen ? kvTable(chosen, ['tokens_per_s_per_gpu', 'tokens_per_s_per_user', 'ttft_s', 'tpot_s', 'batch']
        .filter((k) => chosen[k] !== undefined)) : null,
      allFigures(inf),
      chosen ? allFigures(chosen, Object.keys(chosen).filter((k) => !['pareto', 'meets_slo'].includes(k)), 'All figures of the chosen layout') : null)));
    const isChosen = (p) => chosen && p.layout === chosen.layout && p.batch === chosen.batch &&
      p.tokens_per_s_per_gpu === chosen.tokens_per_s_per_gpu;

    // The Pareto frontier (throughput vs tokens/s per user, i.e. vs 1/TPOT) is drawn where it
    // means something: on the TPOT chart, whose x axis is log-2 since TPOT spans decades.
    function scatter(id, title, xKey, xFmt, xName, limit, xScale, opts = {}) {
      const layouts = [];
      for (const p of pts) if (!layouts.includes(p.layout)) layouts.push(p.layout);
      const series = layouts.map((l) => ({
        name: l, type: 'scatter', symbolSize: 8,
        data: pts.filter((p) => p.layout === l).map((p) => ({
          value: [p[xKey] * xScale, p.tokens_per_s_per_gpu], p,
          itemStyle: p.meets_slo === false ? { opacity: 0.35 } : undefined })),
      }));
      // The search marks the frontier of each kind (aggregated, disaggregated) on its own: one
      // line per kind, since one line through both zigzagged between them.
      const frontier = opts.frontier ? pts.filter((p) => p.pareto).sort((a, b) => a[xKey] - b[xKey]) : [];
      const xs = pts.map((p) => p[xKey] * xScale).filter((v) => v > 0).concat(limit ? [limit * xScale] : []);
      const kinds = [];
      for (const p of frontier) if (!kinds.includes(p.kind)) kinds.push(p.kind);
      kinds.forEach((kind, k) => {
        series.push({ name: kinds.length > 1 ? `frontier, ${kind}` : 'Pareto frontier', type: 'line', step: false,
          symbol: 'none', z: 1, lineStyle: { color: k ? '#8854d0' : '#2d3748', width: 1.5, type: k ? 'dotted' : 'dashed' },
          itemStyle: { color: k ? '#8854d0' : '#2d3748' },
          data: frontier.filter((p) => p.kind === kind).map((p) => ({ value: [p[xKey] * xScale, p.tokens_per_s_per_gpu], p })) });
      });
      if (chosen && Number.isFinite(chosen[xKey])) {
        series.push({ name: 'chosen', type: 'scatter', symbol: 'pin', symbolSize: 34, z: 5,
          itemStyle: { color: '#eb3b5a' },
          label: { show: true, formatter: '★', color: '#fff', fontSize: 11, offset: [0, -3] },
          data: [{ value: [chosen[xKey] * xScale, chosen.tokens_per_s_per_gpu], p: chosen }] });
      }
      if (limit && series.length) {
        series[0].markLine = { symbol: 'none', silent: true, lineStyle: { color: '#eb3b5a', type: 'dashed' },
          label: { formatter: opts.limitLabel || `limit ${seconds(limit)}`, color: '#eb3b5a' }, data: [{ xAxis: limit * xScale }] };
      }
      const option = baseOption({
        tooltip: { trigger: 'item', formatter: (p) => {
          const q = p.data.p || {};
          return `${p.marker}<b>${esc(q.layout || p.seriesName)}</b>${q.batch ? ` · batch ${esc(q.batch)}` : ''}` +
            `<br>${sig(q.tokens_per_s_per_gpu)} tokens/s per GPU<br>TTFT ${seconds(q.ttft_s)} · TPOT ${seconds(q.tpot_s)}` +
            (q.meets_slo === false ? '<br><i>misses the latency limits</i>' : '');
        } },
        // One scrolling legend line: an auto search shows dozens of layouts, which a plain
        // legend wrapped over the plot.
        legend: { type: 'scroll', bottom: 0, textStyle: { fontSize: 12 }, itemWidth: 14, itemHeight: 10 },
        grid: { left: 64, right: 28, top: 28, bottom: 72 },
        xAxis: Object.assign(opts.log && xs.length
          ? { type: 'log', logBase: 2, min: 2 ** Math.floor(Math.log2(Math.min(...xs))),
              max: 2 ** Math.ceil(Math.log2(Math.max(...xs))), axisLabel: { formatter: xFmt } }
          : { type: 'value', scale: true, axisLabel: { formatter: xFmt } }, axisName(xName, 28)),
        yAxis: Object.assign({ type: 'value', axisLabel: { formatter: (v) => sig(v) } }, axisName('tokens/s per GPU', 48)),
        series,
      });
      return card(title, chart(id, 'inference', option, 430), { note: 'faded: misses the latency limits', wide: opts.wide });
    }
    // Latency CDFs of the simulated requests, from the percentiles the run reports (p50, p90,
    // p99, max): the share of requests served within a time, against the limit.
    const cdf = (id, title, stats, limit, scale, unit) => {
      const qs = [['p50', 50], ['p90', 90], ['p99', 99], ['max', 100]]
        .filter(([k]) => stats && num(stats[k])).map(([k, q]) => [stats[k] * scale, q, k]);
      if (qs.length < 2) return null;
      // The axis reaches past both the slowest request and the limit, so the limit line is
      // always drawn (an axis fitted to the data alone ended before a limit nobody reached).
      const reach = Math.max(qs[qs.length - 1][0], num(limit) ? limit * scale : 0);
      const option = baseOption({
        tooltip: { trigger: 'item', formatter: (p) => `${p.marker}${p.data.value[2]}: ${sig(p.data.value[0])} ${unit}` },
        legend: { show: false },
        grid: { left: 64, right: 36, top: 28, bottom: 56 },
        xAxis: Object.assign({ type: 'value', min: 0, max: niceCeil(reach * 1.08),
          axisLabel: { formatter: (v) => sig(v), hideOverlap: true } }, axisName(unit, 30)),
        yAxis: Object.assign({ type: 'value', min: 0, max: 100, axisLabel: { formatter: '{value}%' } },
          axisName('requests within', 44)),
        // p50, p90 and p99 are labelled on their left; the max, which sits just above p99 and
        // often just right of it, above its point, so the two labels never overlap.
        series: [{ name: title, type: 'line', symbolSize: 8, data: qs.map((q) => ({ value: q,
          label: { position: q[2] === 'max' ? 'top' : 'left' } })),
          label: { show: true, formatter: (p) => `${p.data.value[2]} ${sig(p.data.value[0])}`, fontSize: 11 },
          markLine: num(limit) ? { symbol: 'none', silent: true, lineStyle: { color: '#eb3b5a', type: 'dashed' },
            // Along the line, mid-height: at its top end it sat on the max's label.
            label: { formatter: `limit ${seconds(limit)}`, color: '#eb3b5a', position: 'insideMiddleTop' },
            data: [{ xAxis: limit * scale }] } : undefined }],
      });
      return card(title, chart(id, 'inference', option, 300), { note: 'p50, p90, p99 and max of the simulated requests' });
    };
    const ttftCdf = cdf('inference/ttft-cdf', 'Time to first token (CDF)', inf.ttft_s, inf.ttft_limit_s, 1, 's');
    const tpotCdf = cdf('inference/tpot-cdf', 'Time per output token (CDF)', inf.tpot_s, inf.tpot_limit_s, 1e3, 'ms');
    if (ttftCdf) cards.push(ttftCdf);
    if (tpotCdf) cards.push(tpotCdf);
    if (pts.length) {
      // Throughput vs interactivity (tokens/s per user = 1 / TPOT): the frontier a serving
      // deployment trades along; the TPOT limit is the least interactivity allowed.
      const minUser = num(inf.tpot_limit_s) && inf.tpot_limit_s > 0 ? 1 / inf.tpot_limit_s : null;
      cards.push(scatter('inference/interactivity', 'Throughput vs interactivity', 'tokens_per_s_per_user',
        (v) => `${+v.toPrecision(2)}`, 'tokens/s per user (log scale)', minUser, 1,
        { frontier: true, log: true, wide: true, limitLabel: minUser ? `TPOT limit ${seconds(inf.tpot_limit_s)}` : null }));
      cards.push(scatter('inference/ttft', 'Throughput vs time to first token', 'ttft_s', (v) => `${+v.toPrecision(3)}`,
        'time to first token (s)', inf.ttft_limit_s, 1));
    }
    // `serve --compare OTHER`: the per-GPU ratio to another generation (e.g. GB300 NVL72 over
    // HGX H200) as a waterfall, one bar per change from the baseline's best layout to this one's.
    const gen = inf.generation_ratio;
    const steps = gen && Array.isArray(gen.steps) ? gen.steps.filter((x) => x && num(x.tokens_per_s_per_gpu)) : [];
    if (steps.length >= 2) {
      // The first bar is the baseline system itself (the cluster `--compare` named).
      const names = steps.map((x, i) => (i === 0 && gen.baseline ? `${x.change}: ${gen.baseline}` : String(x.change)))
        .concat(['predicted']);
      const base = [], rise = [], fall = [];
      steps.forEach((x, i) => {
        const prev = i ? steps[i - 1].tokens_per_s_per_gpu : 0;
        const v = x.tokens_per_s_per_gpu;
        base.push(i ? Math.min(prev, v) : 0);
        rise.push(v >= prev ? v - prev : 0);
        fall.push(v < prev ? prev - v : 0);
      });
      const last = steps[steps.length - 1].tokens_per_s_per_gpu;
      base.push(0); rise.push(last); fall.push(0);
      const stepOf = (i) => (i < steps.length ? steps[i] : { change: 'predicted', layout: steps[steps.length - 1].layout,
        tokens_per_s_per_gpu: last, factor: gen.ratio });
      const option = (widthPx) => baseOption({
        tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, formatter: (ps) => {
          const q = stepOf(ps[0].dataIndex);
          return `<b>${esc(q.change)}</b><br>${sig(q.tokens_per_s_per_gpu)} tokens/s per GPU · ×${sig(q.factor)}` +
            `<br>${esc(q.layout)}`;
        } },
        legend: { show: false },
        // Labels wrap inside their bar's slot (no rotation: a rotated first label ran off the
        // left edge), and the grid makes room for them.
        grid: { left: 64, right: 24, top: 28, bottom: 16, containLabel: true },
        xAxis: { type: 'category', data: names, axisLabel: { interval: 0, fontSize: 11, lineHeight: 14,
          width: Math.max(48, ((widthPx || 900) - 100) / names.length - 10), overflow: 'break' } },
        yAxis: Object.assign({ type: 'value', axisLabel: { formatter: (v) => sig(v) } }, axisName('tokens/s per GPU', 48)),
        series: [
          { name: 'base', type: 'bar', stack: 'w', silent: true, itemStyle: { color: 'transparent' }, data: base },
          { name: 'gain', type: 'bar', stack: 'w', itemStyle: { color: '#20bf6b' }, data: rise.map((v, i) => (i === 0 || i === names.length - 1 ? null : v)),
            label: { show: true, position: 'top', formatter: (q) => (q.value ? `×${sig(stepOf(q.dataIndex).factor)}` : '') } },
          { name: 'loss', type: 'bar', stack: 'w', itemStyle: { color: '#eb3b5a' }, data: fall,
            label: { show: true, position: 'bottom', formatter: (q) => (q.value ? `×${sig(stepOf(q.dataIndex).factor)}` : '') } },
          { name: 'total', type: 'bar', stack: 'w', itemStyle: { color: '#3867d6' },
            data: rise.map((v, i) => (i === 0 || i === names.length - 1 ? v : null)),
            label: { show: true, position: 'top', formatter: (q) => sig(q.value) } },
        ],
      });
      cards.push(card('Why this generation is faster per GPU', chart('inference/generation', 'inference', option, 380),
        { wide: true, note: `×${sig(gen.ratio)} per GPU${gen.baseline ? ` over ${gen.baseline}` : ''} predicted; each bar one change, best layout re-searched` }));
    }
    // `serve --power` (and scenario files with inference.power): the serving run's power view.
    if (inf.power && typeof inf.power === 'object') cards.push(...powerCards(inf.power, 'inference/power', 'Serving power'));
    return cards;
  }

  // The power view of a training step or of a serving run: its figures, then one chart per
  // waveform (ids PREFIX/0, PREFIX/1, ...).
  function powerCards(p, prefix, title) {
    const cards = [];
    const waves = Array.isArray(p.waveforms) ? p.waveforms : [];
    // The rack's swing with and without smoothing while the job runs its steps (between the
    // window's start + init and its stop; the whole waveform when there is no window), so the
    // ramps at start and stop do not count as swing.
    const win = p.window || {};
    const t0 = (num(win.start_s) ? win.start_s : 0) + (num(win.init_s) ? win.init_s : 0);
    const swingOf = (re) => {
      const w = waves.find((x) => re.test(String(x.name)) && Array.isArray(x.t_s) && Array.isArray(x.power_W));
      if (!w) return null;
      let lo = Infinity, hi = -Infinity;
      w.t_s.forEach((t, i) => {
        if (!num(win.stop_s) || (t >= t0 && t <= win.stop_s)) { lo = Math.min(lo, w.power_W[i]); hi = Math.max(hi, w.power_W[i]); }
      });
      return hi >= lo ? hi - lo : null;
    };
    const rackRaw = swingOf(/rack(?!.*smooth)/i);
    const rackSmooth = swingOf(/rack.*smooth|smooth.*rack/i);
    const slow = num(p.compute_slowdown) && p.compute_slowdown > 1.0005 ? p.compute_slowdown
      : num(p.decode_slowdown) && p.decode_slowdown > 1.0005 ? p.decode_slowdown : null;
    cards.push(answer([
      num(p.facility_peak_W) || num(p.facility_W) ? [si(num(p.facility_peak_W) ? p.facility_peak_W : p.facility_W, 'W'), 'facility peak',
        num(p.pue) ? `PUE ${sig(p.pue)}` : null] : null,
      num(p.cluster_peak_W) ? [si(p.cluster_peak_W, 'W'), 'IT peak', num(p.cluster_avg_W) ? `average ${si(p.cluster_avg_W, 'W')}` : null] : null,
      rackRaw !== null ? [si(rackRaw, 'W'), num(win.stop_s) ? 'rack swing in steps' : 'rack swing', rackSmooth !== null ? `${si(rackSmooth, 'W')} with smoothing` : 'no smoothing'] : null,
      num(p.energy_per_token_J) ? [si(p.energy_per_token_J, 'J'), 'energy per token',
        num(p.facility_energy_per_token_J) ? `${si(p.facility_energy_per_token_J, 'J')} at the facility` : null] : null,
      slow ? [`${sig((slow - 1) * 100)} %`, 'slower under the cap', p.cap_reason ? String(p.cap_reason) : null] : null,
    ]));
    // Sentences (the basis of a figure) go under the table, where they do not squeeze it.
    const long = (k) => typeof p[k] === 'string' && p[k].length > 40;
    const keys = Object.keys(p);
    // The curated table: what each figure is, in words, with its unit (the keys stay in the
    // folded list below).
    const main = [
      ['gpu_tgp_W', 'GPU board power (TGP)'], ['gpu_cap_W', 'GPU power limit'],
      ['gpu_avg_W', 'GPU power, average'], ['gpu_peak_W', 'GPU power, peak'],
      ['rack_avg_W', 'rack power, average'], ['rack_peak_W', 'rack power, peak'], ['rack_limit_W', 'rack power limit'],
      ['cluster_avg_W', 'IT power, average'], ['cluster_peak_W', 'IT power, peak'], ['facility_W', 'facility power'],
      ['pue', 'PUE (facility / IT)'], ['rack_coolant_flow_L_per_min', 'coolant flow per rack'],
      ['rack_return_peak_C', 'coolant return, peak'], ['energy_per_step_J', 'energy per step (IT)'],
      ['energy_per_token_J', 'energy per token (IT)'], ['tokens_per_s', 'tokens/s'],
    ].filter(([k]) => num(p[k]));
    // The rack limit is the PSUs' usable DC output; the rack's power figures and waveforms are
    // AC (at the PSU inputs), so the limit is also given there, where the charts draw it.
    const perSystem = num(p.systems_per_rack) && p.systems_per_rack > 1;
    const limitText = num(p.rack_limit_W) ? `${si(p.rack_limit_W, 'W')} DC` +
      (num(p.rack_limit_ac_W) ? ` (${si(p.rack_limit_ac_W, 'W')} at the PSU inputs)` : '') : null;
    const what = (k, w) => (k === 'rack_limit_W' && perSystem ? 'PSU capacity per system' : w);
    const value = (k) => (k === 'pue' ? sig(p[k]) : k === 'tokens_per_s' ? si(p[k], '')
      : k === 'rack_limit_W' ? limitText : byKey(k, p[k]));
    const curated = main.length
      ? table(['', ''], main.map(([k, w]) => [what(k, w), value(k)]))
      : kvTable(p, keys.filter((k) => !long(k)));
    cards.push(card(title, h('div', {}, curated,
      keys.filter(long).map((k) => h('p', { class: 'note' }, `${label(k)}: ${p[k]}`)),
      allFigures(p, keys.filter((k) => !long(k))))));
    // A waveform and its smoothed twin ("rack (stage 15)" and "rack (stage 15), smoothed") share
    // one chart, so the swing with and without smoothing reads at a glance; ids PREFIX/0, 1, ...
    const groups = [];
    for (const w of waves) {
      if (!Array.isArray(w.t_s) || !Array.isArray(w.power_W)) continue;
      const base = String(w.name).replace(/,? smoothed$/, '');
      let g = groups.find((x) => x.base === base);
      if (!g) groups.push(g = { base, waves: [] });
      g.waves.push(w);
    }
    groups.forEach((g, i) => {
      const limit = Math.max(0, ...g.waves.map((w) => (num(w.limit_W) ? w.limit_W : 0)));
      // A rack's line is its PSUs' usable DC output drawn at their inputs: say both figures.
      const rackLimit = num(p.rack_limit_ac_W) && Math.abs(limit - p.rack_limit_ac_W) <= 1e-6 * limit;
      const limitLabel = rackLimit ? `limit ${si(p.rack_limit_W, 'W')} DC (${si(limit, 'W')} AC)` : `limit ${si(limit, 'W')}`;
      const color = PALETTE[(i + 4) % PALETTE.length];
      const tMax = g.waves.reduce((m, w) => w.t_s.reduce((x, t) => Math.max(x, Math.abs(t)), m), 0);
      const option = baseOption({
        tooltip: { trigger: 'axis', valueFormatter: (v) => si(v, 'W') },
        legend: { show: g.waves.length > 1, top: 0, textStyle: { fontSize: 12 } },
        grid: { left: 64, right: 24, top: g.waves.length > 1 ? 30 : 24, bottom: 60 },
        dataZoom: [{ type: 'inside' }, { type: 'slider', height: 16, bottom: 8 }],
        xAxis: Object.assign({ type: 'value', min: 'dataMin', max: 'dataMax',
          axisLabel: { formatter: secondsAxis(tMax), hideOverlap: true } }, axisName('time', 26)),
        // The top label is left out: an axis stretched to a limit ends at an odd value whose
        // label sat on the one below it.
        yAxis: { type: 'value', scale: true, axisLabel: { formatter: (v) => si(v, 'W'), showMaxLabel: !limit },
                 max: limit ? (v) => Math.max(v.max, limit) * 1.04 : null },
        series: g.waves.map((w, k) => {
          const smoothed = /smoothed$/.test(String(w.name));
          return {
            name: smoothed ? 'smoothed' : g.waves.length > 1 ? 'as drawn by the job' : String(w.name),
            type: 'line', showSymbol: false, sampling: 'lttb', data: w.t_s.map((t, n) => [t, w.power_W[n]]),
            lineStyle: { width: smoothed ? 2 : 1.2, color: smoothed ? '#2d3748' : color },
            itemStyle: { color: smoothed ? '#2d3748' : color },
            areaStyle: smoothed ? undefined : { opacity: 0.12, color },
            z: smoothed ? 3 : 2,
            markLine: k === 0 && limit ? { symbol: 'none', silent: true, lineStyle: { color: '#eb3b5a', type: 'dashed' },
              label: { formatter: limitLabel, position: 'insideEndTop', color: '#eb3b5a' },
              data: [{ yAxis: limit }] } : undefined,
          };
        }),
      });
      // The swing while the job runs its steps (as in the answer above), not the ramps at start
      // and stop.
      const swing = (w) => {
        let lo = Infinity, hi = -Infinity;
        w.t_s.forEach((t, n) => {
          if (!num(win.stop_s) || (t >= t0 && t <= win.stop_s)) { lo = Math.min(lo, w.power_W[n]); hi = Math.max(hi, w.power_W[n]); }
        });
        return hi >= lo ? hi - lo : 0;
      };
      const raw = g.waves.find((w) => !/smoothed$/.test(String(w.name))) || g.waves[0];
      const sm = g.waves.find((w) => /smoothed$/.test(String(w.name)));
      const note = `peak ${si(Math.max(...raw.power_W), 'W')} · swing${num(win.stop_s) ? ' in steps' : ''} ${si(swing(raw), 'W')}` +
        (sm && sm !== raw ? `, ${si(swing(sm), 'W')} smoothed` : '');
      cards.push(card(`${title}: ${g.base}`, chart(`${prefix}/${i}`, 'power', option, 280),
        { wide: groups.length === 1, note }));
    });
    return cards;
  }

  function powerSection(p) {
    return powerCards(p, 'power', 'Power');
  }

  // Cluster schedule (`clustertwin schedule --json`): {runs: [...]}, one run per placement policy.
  const ETTR_PARTS = [
    ['useful_gpu_hours', 'useful training'], ['slowdown_gpu_hours', 'placement slowdown'],
    ['checkpoint_gpu_hours', 'checkpoint stalls'], ['lost_gpu_hours', 'lost compute'],
    ['restore_gpu_hours', 'restarts'], ['requeue_wait_gpu_hours', 'waiting for nodes']];

  const segmented = (r) => r.placement === 'block' || r.placement === 'kueue';
  function runName(r, runs) {
    const spare = segmented(r) && r.spares_per_block ? ` (${r.spares_per_block} spare)` : '';
    const policy = runs.every((q) => q.policy === r.policy) ? '' : ` · ${r.policy}`;
    return `${r.placement}${spare}${policy}`;
  }
  const dayAxis = () => Object.assign({ type: 'value', min: 'dataMin', max: 'dataMax',
    axisLabel: { formatter: (v) => `${+v.toFixed(2)}` } }, axisName('day', 26));

  /** Wall time of training jobs, by where it went, one stacked bar per run (share of wall). */
  function ettrChart(id, section, runs, names) {
    const series = ETTR_PARTS.map(([k, name]) => ({
      name, type: 'bar', stack: 'ettr', barMaxWidth: 46,
      data: runs.map((e) => (e.wall_gpu_hours > 0 ? (e[k] || 0) / e.wall_gpu_hours : 0)),
    }));
    const option = baseOption({
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, valueFormatter: (v) => percent(v) },
      legend: { type: 'plain', bottom: 0, textStyle: { fontSize: 12 }, itemWidth: 14, itemHeight: 10 },
      grid: { left: 150, right: 28, top: 16, bottom: 70 },
      xAxis: Object.assign({ type: 'value', max: 1, axisLabel: { formatter: (v) => `${Math.round(v * 100)}%` } },
        axisName('share of training jobs\u2019 wall GPU-hours', 26)),
      yAxis: { type: 'category', data: names, inverse: true, axisTick: { show: false } },
      series,
    });
    return chart(id, section, option, Math.max(170, 110 + names.length * 48));
  }

  /** Failures on a timeline: one row per failure class, one symbol per event, sized by GPUs down. */
  function failureChart(id, section, logs, names, days) {
    const classes = [];
    for (const log of logs) for (const f of log) if (!classes.includes(f.class)) classes.push(f.class);
    classes.sort();
    const symbols = ['circle', 'diamond', 'triangle', 'rect'];
    const series = logs.map((log, i) => ({
      name: names[i], type: 'scatter', symbol: symbols[i % symbols.length],
      symbolSize: (v) => Math.min(22, 5 + 2.2 * Math.log2(1 + v[2])),
      itemStyle: { opacity: 0.6 },
      data: log.map((f) => ({ value: [f.t_h / 24, classes.indexOf(f.class) + (logs.length > 1 ? (i - (logs.length - 1) / 2) * 0.18 : 0), f.gpus_down], f })),
    }));
    const option = baseOption({
      tooltip: { trigger: 'item', formatter: (p) => {
        const f = p.data.f;
        return `${p.marker}<b>${esc(f.class)}</b> (${esc(f.scope)} ${esc(f.target)}) at day ${sig(f.t_h / 24)}` +
          `<br>${count(f.gpus_down)} GPUs down · ${count(f.jobs_hit)} jobs hit · repair ${seconds(f.repair_h * 3600)}`;
      } },
      legend: { show: logs.length > 1, top: 4 },
      grid: { left: 110, right: 24, top: logs.length > 1 ? 36 : 16, bottom: 60 },
      dataZoom: [{ type: 'inside', filterMode: 'weakFilter' }, { type: 'slider', height: 16, bottom: 8, filterMode: 'weakFilter' }],
      xAxis: Object.assign(dayAxis(), { min: 0, max: days > 0 ? days : 'dataMax' }),
      yAxis: { type: 'value', min: -1, max: classes.length, interval: 1, inverse: true,
               axisLabel: { formatter: (v) => classes[v] || '' }, splitLine: { lineStyle: { color: '#f0f2f5' } } },
      series,
    });
    return chart(id, section, option, Math.max(200, 110 + classes.length * 30));
  }

  /** One line per run of a timeline key against days. */
  function timelineChart(id, section, runs, key, names, yFmt, yName, scale = () => 1) {
    const series = runs.map((r, i) => {
      const t = r.timeline || {};
      const ys = t[key] || [];
      return { name: names[i], type: 'line', showSymbol: false, sampling: 'lttb', lineStyle: { width: 1.4 },
        data: (t.t_h || []).map((th, k) => [th / 24, ys[k] * scale(r)]) };
    });
    const option = baseOption({
      tooltip: { trigger: 'axis', valueFormatter: yFmt },
      legend: { top: 4 },
      grid: { left: 64, right: 24, top: 36, bottom: 60 },
      dataZoom: [{ type: 'inside' }, { type: 'slider', height: 16, bottom: 8 }],
      xAxis: dayAxis(),
      yAxis: Object.assign({ type: 'value', axisLabel: { formatter: yFmt } }, axisName(yName, 48)),
      series,
    });
    return chart(id, section, option, 300);
  }

  function scheduleSection(s) {
    const runs = Array.isArray(s.runs) ? s.runs : [];
    if (!runs.length) return [card('Schedule', h('p', {}, 'No runs.'), { full: true })];
    const names = runs.map((r) => runName(r, runs));
    const cards = [];
    const r0 = runs[0];
    // The answer: each run's utilisation, goodput and ETTR over the horizon (one row of figures
    // per placement when runs are compared).
    const pick = (f) => { try { return f(); } catch (e) { return null; } };
    runs.forEach((r, i) => cards.push(answer([
      num(r.utilization) ? [percent(r.utilization), 'GPU utilisation', `over ${seconds(r.horizon_s)}`] : null,
      num(r.goodput_fraction) ? [percent(r.goodput_fraction), 'goodput', 'useful GPU-time / all'] : null,
      pick(() => r.ettr.wall_gpu_hours > 0) ? [percent(r.ettr.ettr), 'ETTR', 'training jobs'] : null,
      pick(() => num(r.queue_wait_s.mean)) ? [seconds(r.queue_wait_s.mean), 'mean queue wait',
        num(r.queue_wait_s.p90) ? `p90 ${seconds(r.queue_wait_s.p90)}` : null] : null,
      pick(() => num(r.failures.count)) ? [count(r.failures.count), 'failures',
        `${count(r.failures.job_interruptions)} job interruptions`] : null,
    ], runs.length > 1 ? names[i] : null)));
    const rows = [];
    const row = (what, f) => rows.push([what, ...runs.map((r) => { try { return f(r); } catch (e) { return '–'; } })]);
    row('queue policy / priority', (r) => `${r.policy} / ${r.priority}`);
    row('segment (nodes per block)', (r) => (segmented(r) && r.segment_nodes ? `${r.segment_nodes} (${r.spares_per_block} spare)` : '–'));
    row('jobs submitted / started / finished', (r) => `${count(r.jobs.submitted)} / ${count(r.jobs.started)} / ${count(r.jobs.finished)}`);
    row('jobs running / pending at the end', (r) => `${count(r.jobs.running_at_end)} / ${count(r.jobs.pending_at_end)}`);
    row('GPU utilisation (of all)', (r) => percent(r.utilization));
    row('GPU utilisation (of up GPUs)', (r) => percent(r.utilization_of_available));
    row('nodes busy (occupancy)', (r) => percent(r.node_occupancy));
    row('GPUs down (time share)', (r) => percent(r.down_fraction));
    row('blocks with a node down / short of a segment', (r) => `${percent(r.blocks_with_down_nodes)} / ${percent(r.blocks_short_of_segment)}`);
    row('goodput (useful GPU-time / all)', (r) => percent(r.goodput_fraction));
    row('queue wait mean', (r) => seconds(r.queue_wait_s.mean));
    row('queue wait p50 / p90', (r) => `${seconds(r.queue_wait_s.p50)} / ${seconds(r.queue_wait_s.p90)}`);
    row('job completion time p50 / p90', (r) => `${seconds(r.jct_s.p50)} / ${seconds(r.jct_s.p90)}`);
    row('slowdown mean', (r) => sig(r.slowdown.mean));
    row('failures / job interruptions', (r) => `${count(r.failures.count)} / ${count(r.failures.job_interruptions)}`);
    row('hot swaps / requeues / preemptions', (r) => `${count(r.failures.hot_swaps)} / ${count(r.failures.requeues)} / ${count(r.preemptions)}`);
    row('MTBI (cluster)', (r) => seconds(r.failures.mtbi_s));
    row('lost GPU-hours', (r) => count(r.failures.lost_gpu_hours));
    row('ETTR of training jobs', (r) => percent(r.ettr.ettr));
    cards.push(card(`Schedule: ${r0.cluster}`, h('div', {},
      h('div', { class: 'summary' }, `${count(r0.gpus)} GPUs in ${count(r0.domains)} NVLink domains · ` +
        `${sig(r0.horizon_s / 86400)} days · seed ${r0.seed}`),
      table(['', ...names], rows, { textColumns: runs.map((_, i) => i + 1) }),
      Array.isArray(r0.notes) && r0.notes.length ? h('ul', { class: 'notes' }, r0.notes.map((n) => h('li', {}, String(n)))) : null),
    { full: true }));

    cards.push(card('GPU utilisation over time', timelineChart('schedule/utilization', 'schedule', runs, 'allocated_gpus', names,
      (v) => percent(v), 'allocated GPUs', (r) => 1 / r.gpus), { wide: true, note: 'allocated GPUs / all GPUs' }));
    if (runs.every((r) => r.timeline && Array.isArray(r.timeline.busy_nodes))) {
      cards.push(card('Node occupancy over time', timelineChart('schedule/occupancy', 'schedule', runs, 'busy_nodes', names,
        (v) => percent(v), 'busy nodes', (r) => 1 / r.nodes), { wide: true, note: 'nodes with at least one GPU allocated / all nodes' }));
    }
    cards.push(card('Queue length over time', timelineChart('schedule/queue', 'schedule', runs, 'pending_jobs', names,
      (v) => count(v), 'pending jobs'), { note: 'jobs waiting to start' }));
    cards.push(card('GPUs down over time', timelineChart('schedule/down', 'schedule', runs, 'down_gpus', names,
      (v) => count(v), 'GPUs down'), { note: 'failed nodes and racks awaiting repair' }));
    cards.push(card('Fragmentation over time', timelineChart('schedule/fragmentation', 'schedule', runs, 'partial_domains', names,
      (v) => count(v), 'partly free domains'), { note: 'NVLink domains with some but not all nodes free' }));
    // JSON keys come sorted as text ("65-512 GPUs" before "9-64 GPUs"): order by the first number.
    const buckets = [];
    for (const r of runs) for (const k of Object.keys(r.queue_wait_by_size_s || {})) if (!buckets.includes(k)) buckets.push(k);
    const lowest = (k) => parseInt(k.replace(/^\D*/, ''), 10) || 0;
    buckets.sort((a, b) => lowest(a) - lowest(b));
    if (buckets.length) {
      const option = baseOption({
        tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, valueFormatter: (v) => seconds(v * 3600) },
        legend: { top: 4 },
        grid: { left: 64, right: 24, top: 36, bottom: 48 },
        xAxis: Object.assign({ type: 'category', data: buckets, axisLabel: { interval: 0, fontSize: 11,
          formatter: (v) => v.replace(/ GPUs?$/, '') } }, axisName('job size (GPUs)', 30)),
        yAxis: Object.assign({ type: 'value', axisLabel: { formatter: (v) => `${sig(v)} h` } }, axisName('mean queue wait', 48)),
        series: runs.map((r, i) => ({ name: names[i], type: 'bar', barMaxWidth: 36,
          data: buckets.map((b) => (((r.queue_wait_by_size_s || {})[b] || {}).mean || 0) / 3600) })),
      });
      cards.push(card('Queue wait by job size', chart('schedule/wait_by_size', 'schedule', option, 300)));
    }
    const logs = runs.map((r) => (Array.isArray(r.failure_log) ? r.failure_log : []));
    if (logs.some((l) => l.length)) {
      const shown = logs.reduce((n, l) => n + l.length, 0);
      cards.push(card('Failures on a timeline', failureChart('schedule/failures', 'schedule', logs, names, r0.horizon_s / 86400),
        { full: true, note: `${count(shown)} events${runs.some((r) => r.failure_log_truncated) ? ' (log truncated)' : ''} · size: GPUs down · scroll to zoom` }));
    }
    if (runs.some((r) => r.ettr && r.ettr.wall_gpu_hours > 0)) {
      cards.push(card('ETTR breakdown', ettrChart('schedule/ettr', 'schedule', runs.map((r) => r.ettr), names),
        { full: true, note: `training jobs: ${runs.map((r) => `${r.placement} ETTR ${percent(r.ettr.ettr)}`).join(' · ')}` }));
    }
    return cards;
  }

  // One long training job under failures (`clustertwin goodput --json`).
  function goodputSection(g) {
    const cards = [];
    const ck = g.checkpoint || {};
    const facts = [
      ['model', g.model], ['GPUs of the job', `${count(g.gpus)} of ${count(g.cluster_gpus)}`],
      ['simulated', seconds(g.horizon_s)], ['step time', seconds(g.step_time_s)],
      ['parameters', si(g.parameters, '')], ['checkpoint size', si(ck.bytes, 'B')],
      ['save stall (delta)', seconds(ck.save_s)], ['restart (R)', seconds(ck.restore_s)],
      ['expected MTBI (M)', seconds(g.mtbi_expected_s)], ['simulated MTBI', seconds(g.mtbi_s)],
      ['Young/Daly interval', seconds(ck.young_daly_interval_s)],
      ['interval used', `${seconds(ck.interval_s)}${ck.interval_auto ? ' (auto)' : ''}`],
      ['interruptions', count(g.interruptions)], ['hot swaps / requeues', `${count(g.hot_swaps)} / ${count(g.requeues)}`],
      ['ETTR simulated', percent((g.ettr_breakdown || {}).ettr)], ['ETTR first order', percent(g.ettr_expected)],
    ];
    const eb = g.ettr_breakdown || {};
    cards.push(answer([
      num(eb.ettr) ? [percent(eb.ettr), 'ETTR', `effective training time over ${seconds(g.horizon_s)}`] : null,
      num(g.mtbi_s) ? [seconds(g.mtbi_s), 'mean time between interruptions', num(g.mtbi_expected_s) ? `expected ${seconds(g.mtbi_expected_s)}` : null] : null,
      num(g.interruptions) ? [count(g.interruptions), 'interruptions', `${count(g.hot_swaps)} hot swaps, ${count(g.requeues)} requeues`] : null,
      num(ck.interval_s) ? [seconds(ck.interval_s), 'checkpoint interval', num(ck.young_daly_interval_s) ? `Young/Daly ${seconds(ck.young_daly_interval_s)}` : null] : null,
    ]));
    cards.push(card(`Goodput: ${g.model} on ${g.cluster}`, table(['', ''], facts, { textColumns: [1] })));
    if (g.ettr_breakdown && g.ettr_breakdown.wall_gpu_hours > 0) {
      cards.push(card('Where the wall time went', ettrChart('goodput/ettr', 'goodput', [g.ettr_breakdown], ['training job']),
        { note: `ETTR ${percent(g.ettr_breakdown.ettr)}` }));
    }
    const sweep = Array.isArray(g.interval_sweep) ? g.interval_sweep : [];
    if (sweep.length) {
      const option = baseOption({
        tooltip: { trigger: 'axis', valueFormatter: (v) => percent(v) },
        legend: { top: 4 },
        grid: { left: 64, right: 24, top: 36, bottom: 48 },
        xAxis: Object.assign({ type: 'log', logBase: 2, axisLabel: { formatter: (v) => seconds(v) } }, axisName('checkpoint interval (log scale)', 28)),
        yAxis: Object.assign({ type: 'value', scale: true, axisLabel: { formatter: (v) => percent(v) } }, axisName('ETTR', 52)),
        series: [
          { name: 'first order', type: 'line', data: sweep.map((p) => [p.interval_s, p.ettr_expected]) },
          { name: 'simulated', type: 'line', data: sweep.map((p) => [p.interval_s, p.ettr_simulated]),
            markLine: ck.young_daly_interval_s ? { symbol: 'none', silent: true, lineStyle: { color: '#eb3b5a', type: 'dashed' },
              label: { formatter: 'Young/Daly', color: '#eb3b5a' }, data: [{ xAxis: ck.young_daly_interval_s }] } : undefined },
        ],
      });
      cards.push(card('ETTR against the checkpoint interval', chart('goodput/sweep', 'goodput', option, 300)));
    }
    const log = Array.isArray(g.failure_log) ? g.failure_log : [];
    if (log.length) {
      cards.push(card('Failures on a timeline', failureChart('goodput/failures', 'goodput', [log], ['failures'], g.horizon_s / 86400),
        { full: true, note: `${count(log.length)} events · size: GPUs down · scroll to zoom` }));
    }
    return cards;
  }

  // A design study (`clustertwin sweep --json/--report`): the points table, the Pareto frontier
  // of two outputs and a tornado chart of each design key's main effect on one output; both
  // computed by the sweep layer (src/clustertwin/sweep/analysis.h), drawn here.
  function sweepSection(s) {
    const t = s.table || { columns: [], rows: [] };
    const cols = Array.isArray(t.columns) ? t.columns : [];
    const rows = Array.isArray(t.rows) ? t.rows : [];
    const axes = Array.isArray(s.axes) ? s.axes : [];
    const cards = [];
    const cell = (v) => (v === null || v === undefined ? '–'
      : typeof v === 'number' ? (Number.isInteger(v) ? String(v) : sig(v, 4)) : String(v));
    const numericCols = cols.map((c, i) => i === 0 || rows.some((r) => typeof r[i] === 'number'));
    const textColumns = cols.map((_, i) => i).filter((i) => !numericCols[i]);
    const shown = rows.slice(0, 500);
    cards.push(card(`Sweep: ${s.name}`, h('div', {},
      h('div', { class: 'summary' }, `${count(s.points)} points over ${axes.length} design keys · ` +
        `${count(s.failed_points || 0)} with an error` + (rows.length > shown.length ? ` · first ${shown.length} shown` : '')),
      table(cols, shown.map((r) => r.map(cell)), { textColumns })), { full: true }));
    const col = (name) => cols.indexOf(name);
    const an = s.analysis || {};
    const par = an.pareto;
    if (par && col(par.x) >= 0 && col(par.y) >= 0) {
      const xi = col(par.x), yi = col(par.y);
      const front = new Set(par.ids || []);
      const ok = rows.filter((r) => typeof r[xi] === 'number' && typeof r[yi] === 'number');
      const pt = (r) => ({ value: [r[xi], r[yi]], id: r[0] });
      const describe = (id) => {
        const r = rows.find((x) => x[0] === id);
        return r ? axes.map((a, i) => `${esc(a)} = ${esc(cell(r[1 + i]))}`).join('<br>') : '';
      };
      const option = baseOption({
        tooltip: { trigger: 'item', formatter: (p) => `point ${esc(p.data.id)}<br>${describe(p.data.id)}<br>` +
          `${esc(par.x)}: ${esc(sig(p.data.value[0], 4))}<br>${esc(par.y)}: ${esc(sig(p.data.value[1], 4))}` },
        legend: { top: 4 },
        xAxis: Object.assign({ type: 'value', scale: true }, axisName(`${par.x} (${par.x_goal === 'max' ? 'more' : 'less'} is better)`, 28)),
        yAxis: Object.assign({ type: 'value', scale: true }, axisName(`${par.y} (${par.y_goal === 'max' ? 'more' : 'less'} is better)`, 52)),
        series: [
          { name: 'points', type: 'scatter', symbolSize: 7, itemStyle: { color: '#a5b1c2' },
            data: ok.filter((r) => !front.has(r[0])).map(pt) },
          { name: 'Pareto frontier', type: 'line', symbolSize: 9, step: false,
            data: ok.filter((r) => front.has(r[0])).sort((a, b) => a[xi] - b[xi]).map(pt) },
        ],
      });
      cards.push(card('Pareto frontier', chart('sweep/pareto', 'sweep', option, 340),
        { wide: true, note: `${count(front.size)} of ${count(ok.length)} points are not dominated` }));
    }
    const tor = an.tornado;
    if (tor && Array.isArray(tor.bars) && tor.bars.length) {
      const bars = tor.bars.slice().reverse();  // widest on top
      const lows = bars.map((b) => b.low);
      const option = baseOption({
        tooltip: { trigger: 'item', formatter: (p) => {
          const b = bars[p.dataIndex];
          return `<b>${esc(b.key)}</b><br>` + (b.levels || []).map((l) =>
            `${esc(l.value)}: ${esc(sig(l.mean, 4))} (${esc(l.points)} points)`).join('<br>');
        } },
        legend: { show: false },
        grid: { left: 200, right: 24, top: 16, bottom: 48 },
        xAxis: Object.assign({ type: 'value', scale: true, min: Math.min(...lows) }, axisName(`mean ${tor.output} over the points at each value`, 28)),
        yAxis: { type: 'category', data: bars.map((b) => b.key), axisLabel: { width: 190, overflow: 'truncate' } },
        series: [
          { name: 'base', type: 'bar', stack: 'span', itemStyle: { color: 'transparent' }, silent: true,
            data: lows },
          { name: 'effect', type: 'bar', stack: 'span', data: bars.map((b) => b.high - b.low) },
        ],
      });
      cards.push(card(`Effect of each design key on ${tor.output}`, chart('sweep/tornado', 'sweep', option, 80 + 36 * bars.length),
        { wide: true, note: 'each bar spans the lowest and highest mean over the key\'s values (main effects)' }));
    }
    return cards;
  }

  function warningsSection(list) {
    if (!list.length) return [card(null, h('p', { class: 'ok' }, '✓ No warnings.'), { full: true })];
    return [card(null, h('ul', { class: 'warnings' }, list.map((w) => h('li', {}, String(w)))), { full: true })];
  }

  function rawSection(key, value) {
    return [card(key, h('details', {}, h('summary', {}, 'raw JSON (no view for this result yet)'),
      h('pre', {}, JSON.stringify(value, null, 2))), { full: true })];
  }

  // ------------------------------------------------------------------------------------ page

  const SECTIONS = [
    ['cluster', 'Cluster', clusterSection],
    ['collectives', 'Collectives', collectivesSection],
    ['training', 'Training', (v, d) => trainingSection(v, d)],
    ['inference', 'Inference', inferenceSection],
    ['power', 'Power over time', powerSection],
    ['schedule', 'Cluster schedule', scheduleSection],
    ['goodput', 'Goodput of a training job', goodputSection],
    ['sweep', 'Design study', sweepSection],
    ['warnings', 'Warnings', (v) => warningsSection(Array.isArray(v) ? v : [])],
  ];
  const KNOWN = new Set(SECTIONS.map((s) => s[0]).concat(['meta', 'schema_version']));

  function render() {
    const raw = document.getElementById('clustertwin-results');
    const data = raw ? JSON.parse(raw.textContent) : {};
    const root = document.getElementById('report');
    root.append(header(data));
    const present = SECTIONS.filter(([key]) => data[key] !== undefined)
      .concat(Object.keys(data).filter((k) => !KNOWN.has(k)).sort().map((k) => [k, k, (v) => rawSection(k, v)]));
    const nav = h('nav', { class: 'toc' }, h('div', { class: 'toc-inner' },
      present.map(([key, title]) => h('a', { href: `#section-${key}` }, title))));
    root.append(nav);
    const main = h('main', {});
    for (const [key, title, fn] of present) {
      let body;
      try {
        body = fn(data[key], data);
      } catch (err) {
        console.error(`clustertwin report: section "${key}" failed:`, err);
        body = [card('Could not draw this section', h('pre', { class: 'error' }, String(err && err.stack || err)), { full: true })];
      }
      main.append(h('section', { id: `section-${key}`, 'data-section': key },
        h('h2', {}, title), h('div', { class: 'grid' }, body)));
    }
    root.append(main);
    root.append(h('footer', {},
      h('span', {}, 'Made by clustertwin from the results JSON embedded in this file; it needs no network.'),
      downloadButton(data)));
    let drawn = [];
    try {
      drawn = drawCharts();
    } catch (err) {
      console.error('clustertwin report: chart failed:', err);
    }
    window.__reportCharts = drawn;
    window.__reportReady = true;
  }

  /** "Download JSON": the embedded results as a file, via a Blob (no network). */
  function downloadButton(data) {
    return h('button', { class: 'download', type: 'button', onclick: () => {
      const url = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: 'application/json' }));
      const a = h('a', { href: url, download: 'clustertwin-results.json' });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    } }, 'Download results JSON');
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', render);
  else render();
})();
