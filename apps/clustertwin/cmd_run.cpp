// The flagship scenario (plain `clustertwin`): the Azure NDv6 GB300 cluster described, with the
// workloads of the scenario as they land, a one-screen summary and the HTML report.

#include <fmt/format.h>

#include <iostream>

#include "clustertwin/report/html.h"
#include "commands.h"

namespace clustertwin::app {

int run_flagship(const Context& ctx) {
  auto d = describe_cluster(ctx, "azure-ndv6-gb300");
  if (!d) return bad_input(d.error());
  report::Json results = {{"cluster", d->json}, {"scenario", "azure-ndv6-gb300 (built-in)"}};
  std::cout << d->text;
  if (!ctx.no_report) {
    const std::string html = report::render_html(results);
    if (auto st = report::write_text(html, ctx.report_path); !st) return bad_input(st.error());
    std::cout << fmt::format("\nreport: {} ({:.1f} MB); open it in a browser\n", ctx.report_path,
                             static_cast<double>(html.size()) / 1e6);
  }
  return kExitOk;
}

}  // namespace clustertwin::app
