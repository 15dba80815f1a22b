// `clustertwin report --from results.json [--out report.html]`: the HTML report of a results JSON
// (what `--json` writes, or a `describe --json` page) as one self-contained, offline page.

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "clustertwin/base/file.h"
#include "clustertwin/report/html.h"
#include "clustertwin/report/json_out.h"
#include "commands.h"

namespace clustertwin::app {
namespace {

struct ReportOptions {
  std::string from;
  std::string out = "clustertwin-report.html";
};

base::Result<std::string> read_all(const std::string& path) {
  if (path == "-") {
    auto text = base::read_all(std::cin);
    if (!text) return base::fail(text.error().message, "<stdin>");
    return text;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return base::fail("is a directory (expected a results JSON file)", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return base::fail("cannot read file", path);
  auto text = base::read_all(in);
  if (!text) return base::fail(text.error().message, path);
  return text;
}

int report(const Context& ctx, const ReportOptions& o) {
  auto text = read_all(o.from);
  if (!text) return bad_input(text.error());
  auto results = report::read_results(*text, o.from);
  if (!results) return bad_input(results.error());
  const std::string html = report::render_html(*results);
  if (auto st = report::write_text(html, o.out); !st) return bad_input(st.error());
  if (!ctx.quiet && o.out != "-") {
    std::cerr << fmt::format("wrote {} ({:.2f} MB)\n", o.out,
                             static_cast<double>(html.size()) / 1e6);
  }
  return kExitOk;
}

}  // namespace

Verb add_report(CLI::App& app, const Context& ctx) {
  auto opts = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Write the HTML report of a results JSON: one self-contained page (charts, tables and the "
      "data inlined; it opens offline).\n"
      "Example: clustertwin describe gb300-nvl72*8 --json r.json && clustertwin report --from "
      "r.json --out r.html");
  cmd->add_option("--from", opts->from, "results JSON written by --json ('-' for stdin)")
      ->required();
  cmd->add_option("--out", opts->out, "the HTML file to write ('-' for stdout)")
      ->capture_default_str();
  return {cmd, [&ctx, opts] { return report(ctx, *opts); }};
}

}  // namespace clustertwin::app
