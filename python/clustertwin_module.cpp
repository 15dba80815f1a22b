// The Python door (DESIGN.md §2: "thin ways in"): `import clustertwin`, then
//   clustertwin.train(cluster="hgx-h100*2", model="llama3.1-8b", tp=8)   -> dict
//   clustertwin.serve(cluster="hgx-h100*1", model="llama3.1-8b", serving="auto") -> dict
//   clustertwin.goodput(...), clustertwin.power(...), clustertwin.schedule(...)   -> dict
//   clustertwin.collective(cluster="hgx-h100*1", gpus=8, op="all_reduce")          -> dict
// Keywords are the keys of the request's field table (scenario/fields.h: the same table that
// makes the CLI's flags and the scenario files' keys); the library checks them as it does for
// every door. Results are the JSON `clustertwin train|serve|goodput|power|schedule --json` writes,
// through the same serializer (report::dump), parsed by Python's json module. Bad input raises
// clustertwin.Error (a ValueError) carrying the library's message with each field named by its
// keyword.

#include <pybind11/pybind11.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "clustertwin/base/text.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/collective.h"
#include "clustertwin/scenario/goodput.h"
#include "clustertwin/scenario/power.h"
#include "clustertwin/scenario/schedule.h"
#include "clustertwin/scenario/serving.h"
#include "clustertwin/scenario/training.h"

namespace py = pybind11;

namespace clustertwin::python {
namespace {

/// Bad input, as clustertwin.Error in Python (registered in the module's init).
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The keyword naming the environment's catalog directory; not a field of any request.
constexpr const char* kCatalogKeyword = "catalog";

[[noreturn]] void raise(const std::string& message, const std::vector<scenario::FieldWord>& words) {
  throw InputError(scenario::render(message, words, scenario::Door::kPython));
}

std::string type_name(const py::handle& v) { return py::str(py::type::of(v).attr("__name__")); }

/// Sets one field of `r` from a Python value of the field's type: a bool is not taken for a
/// number nor a number for a bool, an integer must fit the member; the ranges and choices are
/// the library's checks (check_training / check_serving, run by the request's resolution).
template <class R>
void set_field(R& r, const scenario::Field<R>& field, const py::handle& v,
               const std::vector<scenario::FieldWord>& words) {
  const std::string what = "{" + field.key + "}: expected ";
  std::visit(
      [&](auto member) {
        auto& target = r.*member;
        using T = std::remove_reference_t<decltype(target)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (!py::isinstance<py::bool_>(v))
            raise(what + "True or False, got " + type_name(v), words);
          target = field.inverted ? !v.cast<bool>() : v.cast<bool>();
        } else if constexpr (std::is_integral_v<T>) {
          if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v)) {
            raise(what + "an integer, got " + type_name(v), words);
          }
          const auto as_text = [&] { return std::string(py::str(v)); };
          long long x = 0;
          try {
            x = v.cast<long long>();
          } catch (const py::cast_error&) {
            raise(what + base::describe_range(field.ints) + ", got " + as_text(), words);
          }
          if (auto st = base::check_integer(x, field.ints); !st) {
            raise("{" + field.key + "}: " + st.error().message, words);
          }
          if (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max()) {
            raise(what + "an integer that fits in " + std::to_string(8 * sizeof(T)) +
                      " bits, got " + as_text(),
                  words);
          }
          target = static_cast<T>(x);
        } else if constexpr (std::is_floating_point_v<T>) {
          if (py::isinstance<py::bool_>(v) ||
              !(py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v))) {
            raise(what + "a number, got " + type_name(v), words);
          }
          target = v.cast<double>();
        } else {
          if (!py::isinstance<py::str>(v)) raise(what + "a string, got " + type_name(v), words);
          target = v.cast<std::string>();
        }
      },
      field.member);
}

/// Sets the field `key` of `r` when one of `tables` has it; false when none does.
template <class R>
bool set_if_field(R& r, std::initializer_list<const scenario::FieldTable<R>*> tables,
                  const std::string& key, const py::handle& value,
                  const std::vector<scenario::FieldWord>& words, std::vector<std::string>& keys) {
  for (const auto* t : tables) {
    for (const auto& f : *t) {
      keys.push_back(f.key);
      if (f.key == key) {
        set_field(r, f, value, words);
        return true;
      }
    }
  }
  return false;
}

/// Sets `env`'s catalog directory when `key` is `catalog`; false otherwise.
bool set_if_catalog(scenario::Environment& env, const std::string& key, const py::handle& value,
                    const std::vector<scenario::FieldWord>& words) {
  if (key != kCatalogKeyword) return false;
  if (!py::isinstance<py::str>(value)) {
    raise(std::string(kCatalogKeyword) + ": expected a directory, got " + type_name(value), words);
  }
  env.catalog_dir = value.cast<std::string>();
  return true;
}

[[noreturn]] void unknown_keyword(const std::string& key, std::vector<std::string> keys,
                                  const std::vector<scenario::FieldWord>& words) {
  keys.push_back(kCatalogKeyword);
  raise("unknown keyword '" + key + "'" + base::did_you_mean(key, keys), words);
}

/// A request from keyword arguments: each keyword a key of one of `tables` (or `catalog`, the
/// environment's catalog directory, which goes to `env`).
template <class R>
R request_from(const py::kwargs& kwargs,
               std::initializer_list<const scenario::FieldTable<R>*> tables,
               const std::vector<scenario::FieldWord>& words, scenario::Environment& env) {
  R r;
  for (const auto& item : kwargs) {
    const std::string key = py::str(item.first);
    std::vector<std::string> keys;
    if (set_if_catalog(env, key, item.second, words)) continue;
    if (!set_if_field(r, tables, key, item.second, words, keys)) unknown_keyword(key, keys, words);
  }
  return r;
}

/// A training request and a study's settings (goodput, power) from one set of keyword
/// arguments, as their verbs take one set of flags: each keyword a key of the training table or
/// of the study's.
template <class S>
std::pair<scenario::TrainingRequest, S> request_pair_from(
    const py::kwargs& kwargs, const scenario::FieldTable<S>& study,
    const std::vector<scenario::FieldWord>& words, scenario::Environment& env) {
  std::pair<scenario::TrainingRequest, S> out;
  for (const auto& item : kwargs) {
    const std::string key = py::str(item.first);
    std::vector<std::string> keys;
    if (set_if_catalog(env, key, item.second, words)) continue;
    if (set_if_field(out.first, {&scenario::training_fields()}, key, item.second, words, keys))
      continue;
    if (!set_if_field(out.second, {&study}, key, item.second, words, keys)) {
      unknown_keyword(key, keys, words);
    }
  }
  return out;
}

/// The results document as the CLI writes it (`--json`), as a Python dict.
py::object to_dict(const report::Json& j) {
  return py::module_::import("json").attr("loads")(report::dump(j));
}

py::object train(const py::kwargs& kwargs) {
  const auto& words = scenario::training_words();
  scenario::Environment env;
  const auto request = request_from<scenario::TrainingRequest>(
      kwargs, {&scenario::training_fields(), &scenario::training_power_fields()}, words, env);
  base::Result<scenario::TrainingRun> run = base::fail("not run");
  {
    py::gil_scoped_release unlocked;
    run = scenario::run_training(env, request);
  }
  if (!run) raise(run.error().to_string(), words);
  // As cmd_train.cpp writes it.
  report::Json j = {{"training", run->json}};
  if (!run->power.is_null()) j["power"] = run->power;
  return to_dict(j);
}

py::object serve(const py::kwargs& kwargs) {
  const auto& words = scenario::serving_words();
  scenario::Environment env;
  const auto request =
      request_from<scenario::ServingRequest>(kwargs, {&scenario::serving_fields()}, words, env);
  base::Result<scenario::ServingRun> run = base::fail("not run");
  {
    py::gil_scoped_release unlocked;
    run = scenario::run_serving(env, request, /*quiet=*/true);
  }
  if (!run) raise(run.error().to_string(), words);
  // As cmd_serve.cpp writes it.
  report::Json j = {{"inference", run->json}};
  if (run->power) j["power"] = run->power->json;
  return to_dict(j);
}

py::object goodput(const py::kwargs& kwargs) {
  const auto& words = scenario::goodput_words();
  scenario::Environment env;
  const auto [training, settings] =
      request_pair_from<scenario::GoodputSettings>(kwargs, scenario::goodput_fields(), words, env);
  base::Result<scenario::GoodputRun> run = base::fail("not run");
  {
    py::gil_scoped_release unlocked;
    run = scenario::run_goodput(env, training, settings);
  }
  if (!run) raise(run.error().to_string(), words);
  return to_dict({{"goodput", run->json}});  // as cmd_goodput.cpp writes it
}

py::object power(const py::kwargs& kwargs) {
  const auto& words = scenario::power_words();
  scenario::Environment env;
  const auto [training, settings] =
      request_pair_from<scenario::PowerSettings>(kwargs, scenario::power_fields(), words, env);
  base::Result<scenario::PowerRun> run = base::fail("not run");
  {
    py::gil_scoped_release unlocked;
    run = scenario::run_power(env, training, settings);
  }
  if (!run) raise(run.error().to_string(), words);
  return to_dict({{"training", run->training}, {"power", run->power}});  // as cmd_power.cpp
}

py::object schedule(const py::kwargs& kwargs) {
  const auto& words = scenario::schedule_words();
  scenario::Environment env;
  const auto request =
      request_from<scenario::ScheduleRequest>(kwargs, {&scenario::schedule_fields()}, words, env);
  base::Result<scenario::ScheduleRun> run = base::fail("not run");
  {
    py::gil_scoped_release unlocked;
    run = scenario::run_schedule(env, request, /*quiet=*/true);
  }
  if (!run) raise(run.error().to_string(), words);
  return to_dict({{"schedule", run->json}});  // as cmd_schedule.cpp writes it
}

py::object collective(const py::kwargs& kwargs) {
  const auto& words = scenario::collective_words();
  scenario::Environment env;
  const auto request = request_from<scenario::CollectiveRequest>(
      kwargs, {&scenario::collective_fields()}, words, env);
  base::Result<scenario::CollectiveRun> run = base::fail("not run");
  {
    py::gil_scoped_release unlocked;
    run = scenario::run_collective(env, request);
  }
  if (!run) raise(run.error().to_string(), words);
  return to_dict(run->json);  // as cmd_collective.cpp writes it
}

/// The fields of the tables as Python sees them: keyword -> {"help", "flag", "default"[,
/// "choices"]}.
template <class R>
py::dict fields_of(std::initializer_list<const scenario::FieldTable<R>*> tables,
                   const std::vector<scenario::FieldWord>& words) {
  py::dict d;
  const R defaults;
  for (const auto* t : tables) {
    for (const auto& f : *t) {
      py::dict row;
      row["help"] = scenario::render(f.help, words, scenario::Door::kPython);
      row["flag"] = "--" + f.flag;
      std::visit(
          [&](auto member) {
            const auto& v = defaults.*member;
            using T = std::remove_cvref_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>) {
              row["default"] = f.inverted ? !v : v;
            } else {
              row["default"] = v;
            }
          },
          f.member);
      if (!f.choices.empty()) {
        py::list choices;
        for (const auto& c : f.choices) choices.append(c);
        row["choices"] = choices;
      }
      d[py::str(f.key)] = row;
    }
  }
  return d;
}

}  // namespace
}  // namespace clustertwin::python

PYBIND11_MODULE(clustertwin, m) {
  using namespace clustertwin;
  m.doc() =
      "clustertwin: a digital twin of AI supercomputers. train(**fields), serve(**fields), "
      "goodput(**fields), power(**fields), schedule(**fields) and collective(**fields) take the "
      "keys of a scenario "
      "file's workload blocks (training_fields(), serving_fields(), goodput_fields(), "
      "power_fields(), schedule_fields() and collective_fields() list them with their defaults) "
      "and return the results "
      "JSON of the verb's --json as a dict; catalog=DIR reads another catalog. Bad input raises "
      "clustertwin.Error (a ValueError) with the library's message.";
  py::register_exception<python::InputError>(m, "Error", PyExc_ValueError);
  m.def("train", &python::train,
        "One training step (as `clustertwin train --json -`): keywords are the training fields");
  m.def("serve", &python::serve,
        "One serving study (as `clustertwin serve --json -`): keywords are the serving fields; "
        "serving='auto' searches the layouts");
  m.def("goodput", &python::goodput,
        "One long training job under failures (as `clustertwin goodput --json -`): keywords are "
        "the training fields and the goodput study's (goodput_fields())");
  m.def("power", &python::power,
        "The power view of a training job (as `clustertwin power --json -`): keywords are the "
        "training fields and the power study's (power_fields())");
  m.def("schedule", &python::schedule,
        "A cluster over days to months (as `clustertwin schedule --json -`): keywords are the "
        "schedule fields");
  m.def("collective", &python::collective,
        "A collective's nccl-tests table on a cluster (as `clustertwin collective --json -`): "
        "keywords are the collective fields");
  m.def(
      "collective_fields",
      [] {
        return python::fields_of<scenario::CollectiveRequest>({&scenario::collective_fields()},
                                                              scenario::collective_words());
      },
      "The keywords of collective()");
  m.def(
      "goodput_fields",
      [] {
        auto d = python::fields_of<scenario::TrainingRequest>({&scenario::training_fields()},
                                                              scenario::goodput_words());
        d.attr("update")(python::fields_of<scenario::GoodputSettings>({&scenario::goodput_fields()},
                                                                      scenario::goodput_words()));
        return d;
      },
      "The keywords of goodput(): the training fields and the study's");
  m.def(
      "power_fields",
      [] {
        auto d = python::fields_of<scenario::TrainingRequest>({&scenario::training_fields()},
                                                              scenario::power_words());
        d.attr("update")(python::fields_of<scenario::PowerSettings>({&scenario::power_fields()},
                                                                    scenario::power_words()));
        return d;
      },
      "The keywords of power(): the training fields and the study's");
  m.def(
      "schedule_fields",
      [] {
        return python::fields_of<scenario::ScheduleRequest>({&scenario::schedule_fields()},
                                                            scenario::schedule_words());
      },
      "The keywords of schedule()");
  m.def(
      "training_fields",
      [] {
        return python::fields_of<scenario::TrainingRequest>(
            {&scenario::training_fields(), &scenario::training_power_fields()},
            scenario::training_words());
      },
      "The keywords of train(): keyword -> {'help', 'flag', 'default'[, 'choices']}");
  m.def(
      "serving_fields",
      [] {
        return python::fields_of<scenario::ServingRequest>({&scenario::serving_fields()},
                                                           scenario::serving_words());
      },
      "The keywords of serve(): keyword -> {'help', 'flag', 'default'[, 'choices']}");
}
