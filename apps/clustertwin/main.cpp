// clustertwin: a digital twin of AI supercomputers. Argument parsing and orchestration only;
// every number comes from the library layers (ARCHITECTURE.md).

#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "clustertwin/base/file.h"
#include "clustertwin/scenario/calibrate.h"
#include "clustertwin/scenario/collective.h"
#include "clustertwin/scenario/goodput.h"
#include "clustertwin/scenario/outputs.h"
#include "commands.h"

namespace clustertwin::app {

std::string cli_words(const std::string& message) {
  static const std::vector<scenario::FieldWord> kWords = [] {
    auto w = scenario::goodput_words();  // the training fields and the goodput study's
    for (const auto& s : scenario::serving_words()) w.push_back(s);
    for (const auto& s : scenario::collective_words()) w.push_back(s);
    for (const auto& s : scenario::calibrate_words()) w.push_back(s);
    return w;
  }();
  return scenario::render(message, kWords, scenario::Door::kCli);
}

int bad_input(const base::Error& e) {
  base::Errors all;
  base::Error worded = e;
  worded.message = cli_words(e.message);
  all.add(std::move(worded));
  std::cerr << all.to_string() << "\n";
  // A write that failed is the system's fault, not the input's (DESIGN.md §4).
  return e.kind == base::ErrorKind::kSystem ? kExitInternal : kExitBadInput;
}

int bad_input(const std::string& message) { return bad_input(base::Error{message, {}, 0}); }

namespace {

/// The output flags of every verb, as the library checks them (scenario/outputs.h).
base::Status check_distinct_outputs(const CLI::App& app) {
  std::vector<scenario::OutputPath> given;
  std::vector<const CLI::App*> chain{&app};
  for (size_t i = 0; i < chain.size(); ++i) {
    for (const CLI::App* sub : chain[i]->get_subcommands()) chain.push_back(sub);
    for (const char* name :
         {"--json", "--trace", "--out", "--jobs-csv", "--report", "--csv", "--db"}) {
      const CLI::Option* opt = chain[i]->get_option_no_throw(name);
      if (opt != nullptr && opt->count() > 0 && !opt->results().empty())
        given.push_back({name, opt->results().back()});
    }
  }
  return scenario::check_distinct_outputs(given);
}

/// An option given with an empty value (`--json ''`, a script's unset `--json "$OUT"`) is
/// refused: the library reads "" as "not given", so the run went on without it, exit 0 and no
/// file written. Flags (no value) and options left out are not checked.
base::Status check_no_empty_values(const CLI::App& app) {
  std::vector<const CLI::App*> chain{&app};
  for (size_t i = 0; i < chain.size(); ++i) {
    for (const CLI::App* sub : chain[i]->get_subcommands()) chain.push_back(sub);
    for (const CLI::Option* opt : chain[i]->get_options()) {
      if (opt->count() == 0 || opt->get_type_size() == 0) continue;
      for (const std::string& v : opt->results()) {
        if (v.empty()) {
          const std::string what =
              opt->nonpositional() ? opt->get_name() : "the " + opt->get_name() + " argument";
          return base::fail(what +
                            ": empty value (give one, or leave the option out for its default)");
        }
      }
    }
  }
  return {};
}

}  // namespace

}  // namespace clustertwin::app

int main(int argc, char** argv) {
  using namespace clustertwin::app;
  Context ctx;
  CLI::App app{
      "clustertwin: a digital twin of AI supercomputers.\n"
      "Without a verb it runs the built-in flagship scenario (Azure NDv6 GB300).",
      "clustertwin"};
  app.set_version_flag("--version", "clustertwin 0.1.0");
  app.add_option("--catalog", ctx.catalog_dir,
                 "read the catalog from this directory instead of the built-in one")
      ->check(CLI::ExistingDirectory);
  app.add_flag("-q,--quiet", ctx.quiet, "no progress output on stderr");
  app.add_option(
         "--report", ctx.report_path,
         "write the HTML report to FILE (the flagship run always; schedule, goodput and sweep when "
         "given)")
      ->capture_default_str();
  app.add_flag("--no-report", ctx.no_report, "flagship run: do not write the HTML report");
  app.require_subcommand(0, 1);
  app.fallthrough();  // global options (--catalog, --quiet, --report) also after the verb
  const std::vector<Verb> verbs = {
      add_describe(app, ctx), add_catalog(app, ctx),    add_report(app, ctx),
      add_model(app, ctx),    add_train(app, ctx),      add_run(app, ctx),
      add_search(app, ctx),   add_collective(app, ctx), add_serve(app, ctx),
      add_schedule(app, ctx), add_goodput(app, ctx),    add_export(app, ctx),
      add_power(app, ctx),    add_calibrate(app, ctx),  add_sweep(app, ctx),
      add_cli_docs(app, ctx)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The same shape as every other bad input: "error: --gpus: expected an integer >= 1, got 0".
    std::cerr << "error: " << e.what() << "\nRun with --help for more information.\n";
    return kExitBadInput;
  }
  if (auto st = check_distinct_outputs(app); !st) return bad_input(st.error());
  if (auto st = check_no_empty_values(app); !st) return bad_input(st.error());
  try {
    int rc = -1;
    for (const auto& v : verbs) {
      if (v.command->parsed()) {
        rc = v.run();
        break;
      }
    }
    if (rc < 0) rc = run_flagship(ctx);
    // Text written to stdout that never arrived (a closed pipe, /dev/full) is a failed run.
    if (auto st = clustertwin::base::flush_stdout(); !st) {
      bad_input(st.error());
      return kExitInternal;
    }
    return rc;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
