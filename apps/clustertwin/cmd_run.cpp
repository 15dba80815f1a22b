// `clustertwin run [FILE]` and plain `clustertwin`: a scenario (a cluster and its workloads)
// run end to end: the cluster described, each workload simulated, a one-screen summary, the
// results JSON (--json) and the HTML report. Without a file it runs the built-in flagship,
// examples/azure-ndv6-gb300.yaml, compiled into the binary. Reading and running the file are the
// library's (scenario/scenario_file.h); this is the door.

#include <fmt/format.h>

#include <iostream>

#include "clustertwin/config/reader.h"
#include "clustertwin/report/html.h"
#include "commands.h"

namespace clustertwin::app {

// The flagship scenario: examples/azure-ndv6-gb300.yaml, compiled in (cmake/embed_text.cmake).
extern const char* const kFlagshipYaml;

namespace {

int run_and_write(const Context& ctx, const config::Document& doc, const std::string& json_path) {
  auto out = scenario::run_scenario(ctx, doc, ctx.quiet);
  if (!out) return bad_input(out.error());
  const auto& results = out->results;
  const auto& summary = out->summary;
  if (!json_path.empty()) {
    if (auto st = report::write_json(results, json_path); !st) return bad_input(st.error());
  }
  if (json_path != "-") std::cout << summary;
  if (!ctx.no_report) {
    const std::string html = report::render_html(results);
    if (auto st = report::write_text(html, ctx.report_path); !st) return bad_input(st.error());
    if (json_path != "-") {
      std::cout << fmt::format("  report: {} ({:.1f} MB); open it in a browser\n", ctx.report_path,
                               static_cast<double>(html.size()) / 1e6);
    }
  }
  return kExitOk;
}

struct RunOptions {
  std::string file;
  std::string json;
};

}  // namespace

int run_flagship(const Context& ctx) {
  auto doc = config::parse_document(kFlagshipYaml, "built-in:azure-ndv6-gb300");
  if (!doc) return bad_input(doc.error());
  return run_and_write(ctx, *doc, "");
}

Verb add_run(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run a scenario file (a cluster and its workloads): summary, --json results and the HTML "
      "report. Without a file: the built-in flagship (examples/azure-ndv6-gb300.yaml).\n"
      "Example: clustertwin run examples/azure-ndv6-gb300.yaml --json results.json");
  cmd->add_option("file", o->file, "scenario YAML/JSON file");
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  return {cmd, [&ctx, o] {
            if (o->file.empty()) {
              auto doc = config::parse_document(kFlagshipYaml, "built-in:azure-ndv6-gb300");
              return run_and_write(ctx, *doc, o->json);
            }
            auto doc = config::load_document(o->file);
            if (!doc) return bad_input(doc.error());
            return run_and_write(ctx, *doc, o->json);
          }};
}

}  // namespace clustertwin::app
