#pragma once
/// The HTML report: one self-contained page (scripts, styles and data inlined; a
/// Content-Security-Policy forbids every network request) built from the same results JSON that
/// `--json` writes. Charts are drawn in the browser by Apache ECharts from that JSON, so the page
/// and `--json` can never disagree.
///
/// Sections appear when their top-level key is present (the layout each reads is documented in
/// web/README.md):
///   cluster      the `describe` JSON (counts, compute, memory, nvlink, scale_out, power) and a
///                drawing of racks and fabric tiers
///   collectives  busbw vs message size per algorithm
///   training     step breakdown, per-stage timeline, memory breakdown
///   inference    throughput vs latency, Pareto frontier, chosen layout
///   power        waveforms over time
///   schedule     runs side by side: utilisation, queue, failures over time, ETTR breakdown
///   goodput      one training job under failures: ETTR breakdown, interval sweep, failures
///   warnings     a list of strings
/// Any other top-level key is shown as raw JSON, so a new result is visible before it has a view.

#include <string>

#include "clustertwin/report/json_out.h"

namespace clustertwin::report {

/// The page for `results`. Deterministic: the same JSON gives the same bytes. A bare `describe`
/// JSON (top-level "counts" and "compute") is accepted and shown as the cluster section.
std::string render_html(const Json& results);

/// `results` with a bare describe JSON wrapped as {"cluster": ...}; anything else unchanged.
Json normalize_results(const Json& results);

/// JSON text safe inside <script type="application/json">: compact, and '<', '>', '&' written as
/// \u003c, \u003e, \u0026 (they can only occur inside strings), so no "</script>" or "<!--" can
/// end or confuse the block. Invalid UTF-8 is replaced, never thrown on.
std::string json_for_script(const Json& j);

/// Script text safe inside <script>: "</script" becomes "<\/script" and "<!--" becomes "<\!--".
std::string escape_inline_script(std::string_view js);

}  // namespace clustertwin::report
