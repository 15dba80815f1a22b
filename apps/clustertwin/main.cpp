// clustertwin: a digital twin of AI supercomputers. Argument parsing and orchestration only;
// every number comes from the library layers (ARCHITECTURE.md).

#include <cstdio>
#include <iostream>

#include "commands.h"

namespace clustertwin::app {

base::Result<hardware::Catalog> Context::load_catalog() const {
  if (catalog_dir.empty()) return hardware::Catalog::load_embedded();
  return hardware::Catalog::load_directory(catalog_dir);
}

base::Result<LoadedCluster> Context::load_cluster(const std::string& cluster) const {
  auto cat = load_catalog();
  if (!cat) return base::fail(cat.error());
  auto spec = hardware::resolve_cluster(*cat, cluster);
  if (!spec) return base::fail(spec.error());
  auto topo = topology::Topology::build(*cat, *spec);
  if (!topo) return base::fail(topo.error());
  return LoadedCluster{std::move(*cat), std::move(*spec), std::move(*topo)};
}

int bad_input(const base::Error& e) {
  base::Errors all;
  all.add(e);
  std::cerr << all.to_string() << "\n";
  return kExitBadInput;
}

int bad_input(const std::string& message) { return bad_input(base::Error{message, {}, 0}); }

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
         "write the HTML report to FILE (the flagship run always; schedule and goodput when given)")
      ->capture_default_str();
  app.add_flag("--no-report", ctx.no_report, "flagship run: do not write the HTML report");
  app.require_subcommand(0, 1);
  app.fallthrough();  // global options (--catalog, --quiet, --report) also after the verb
  std::vector<Verb> verbs;
  verbs.push_back(add_describe(app, ctx));
  verbs.push_back(add_catalog(app, ctx));
  verbs.push_back(add_report(app, ctx));
  verbs.push_back(add_model(app, ctx));
  verbs.push_back(add_train(app, ctx));
  verbs.push_back(add_run(app, ctx));
  verbs.push_back(add_search(app, ctx));
  verbs.push_back(add_collective(app, ctx));
  verbs.push_back(add_serve(app, ctx));
  verbs.push_back(add_schedule(app, ctx));
  verbs.push_back(add_goodput(app, ctx));
  verbs.push_back(add_export(app, ctx));
  verbs.push_back(add_power(app, ctx));
  verbs.push_back(add_calibrate(app, ctx));
  verbs.push_back(add_cli_docs(app, ctx));
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  try {
    for (const auto& v : verbs) {
      if (v.command->parsed()) return v.run();
    }
    return run_flagship(ctx);
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
