// The Python door (DESIGN.md §2: "thin ways in"): `import clustertwin`, then
//   clustertwin.train(cluster="hgx-h100*2", model="llama3.1-8b", tp=8)   -> dict
//   clustertwin.serve(cluster="hgx-h100*1", model="llama3.1-8b", serving="auto") -> dict
// Keywords are the keys of the request's field table (scenario/fields.h: the same table that
// makes the CLI's flags and the scenario files' keys); the library checks them as it does for
// every door. Results are the JSON `clustertwin train|serve --json` writes, through the same
// serializer (report::dump), parsed by Python's json module. Bad input raises clustertwin.Error
// (a ValueError) carrying the library's message with each field named by its keyword.

#include <pybind11/pybind11.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "clustertwin/base/text.h"
#include "clustertwin/report/json_out.h"
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

/// A request from keyword arguments: each keyword a key of one of `tables` (or `catalog`, the
/// environment's catalog directory, which goes to `env`).
template <class R>
R request_from(const py::kwargs& kwargs,
               std::initializer_list<const scenario::FieldTable<R>*> tables,
               const std::vector<scenario::FieldWord>& words, scenario::Environment& env) {
  R r;
  for (const auto& item : kwargs) {
    const std::string key = py::str(item.first);
    if (key == kCatalogKeyword) {
      if (!py::isinstance<py::str>(item.second)) {
        raise(
            std::string(kCatalogKeyword) + ": expected a directory, got " + type_name(item.second),
            words);
      }
      env.catalog_dir = item.second.cast<std::string>();
      continue;
    }
    const scenario::Field<R>* field = nullptr;
    std::vector<std::string> keys{kCatalogKeyword};
    for (const auto* t : tables) {
      for (const auto& f : *t) {
        keys.push_back(f.key);
        if (f.key == key) field = &f;
      }
    }
    if (field == nullptr)
      raise("unknown keyword '" + key + "'" + base::did_you_mean(key, keys), words);
    set_field(r, *field, item.second, words);
  }
  return r;
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
      "clustertwin: a digital twin of AI supercomputers. train(**fields) and serve(**fields) take "
      "the keys of a scenario file's workload.training / workload.inference (training_fields() "
      "and serving_fields() list them with their defaults) and return the results JSON of "
      "`clustertwin train|serve --json` as a dict; catalog=DIR reads another catalog. Bad input "
      "raises clustertwin.Error (a ValueError) with the library's message.";
  py::register_exception<python::InputError>(m, "Error", PyExc_ValueError);
  m.def("train", &python::train,
        "One training step (as `clustertwin train --json -`): keywords are the training fields");
  m.def("serve", &python::serve,
        "One serving study (as `clustertwin serve --json -`): keywords are the serving fields; "
        "serving='auto' searches the layouts");
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
