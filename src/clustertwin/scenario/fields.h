#pragma once
/// One field table per request (DESIGN.md §2): a field's scenario-file key (also its Python
/// keyword), its CLI flag, the name messages use, its type (through the request member it sets),
/// its check (a range or a list of choices), its default (the request's own initial value) and its
/// help. The doors are generated from it: the CLI's options (apps/clustertwin/field_options.h),
/// the scenario reader (`read_fields`), docs/cli.md (through the CLI) and the Python keywords.
///
/// Library messages name fields, never flags: a message or help text refers to a field as
/// `{key}` ("{global_batch}: expected ..."), and each door writes its own word for it with
/// `render` ("--global-batch" on the command line, "global_batch" in a scenario file or Python,
/// "global batch" elsewhere).

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "clustertwin/base/number.h"
#include "clustertwin/base/result.h"
#include "clustertwin/config/reader.h"

namespace clustertwin::scenario {

/// The way a request came in: decides the word a message uses for a field.
enum class Door { kLibrary, kCli, kFile, kPython };

template <class R>
struct Field {
  using Member = std::variant<int R::*, int64_t R::*, double R::*, std::string R::*, bool R::*>;
  std::string key;   ///< scenario-file key and Python keyword ("global_batch")
  std::string flag;  ///< CLI flag without its dashes ("global-batch")
  std::string name;  ///< what messages call it ("global batch")
  Member member;     ///< the request's member: its type is the field's type, its initial value the
                     ///< default
  std::string help;  ///< may name other fields as {key}
  base::IntRange ints{};               ///< integers: the accepted range
  base::RealRange reals{};             ///< reals: the accepted range
  std::vector<std::string> choices{};  ///< text: the accepted values (empty: any, checked later)
  bool inverted = false;      ///< a switch whose flag turns the key off (--no-sequence-parallel)
  bool show_default = false;  ///< print the default in --help and docs/cli.md
  bool in_file = true;       ///< read from a workload block (false: the scenario sets it elsewhere)
  std::string short_flag{};  ///< a one-letter CLI alias without its dash ("b" for nccl-tests' -b)
};

template <class R>
using FieldTable = std::vector<Field<R>>;

/// The tables a request is read from (its own, and the ones it shares with other requests), in
/// the order `--help` shows them.
template <class R>
using FieldTables = std::initializer_list<const FieldTable<R>*>;

/// A count's range: integers from 1 to `max`.
constexpr base::IntRange positive(int64_t max) { return {.min = 1, .max = max}; }

/// A field's words for messages, without the request type.
struct FieldWord {
  std::string key, flag, name;
};

template <class R>
std::vector<FieldWord> words_of(const FieldTable<R>& table) {
  std::vector<FieldWord> w;
  w.reserve(table.size());
  for (const auto& f : table) w.push_back({f.key, f.flag, f.name});
  return w;
}

/// The words of several tables, for `render`; `more` adds the words of other requests' tables
/// that this request's messages name (a search's messages name training fields).
template <class R>
std::vector<FieldWord> words_of(FieldTables<R> tables, const std::vector<FieldWord>& more = {}) {
  std::vector<FieldWord> w = more;
  for (const auto* t : tables) {
    for (auto& f : words_of(*t)) w.push_back(std::move(f));
  }
  return w;
}

/// `text` with every `{key}` written in the door's word: the flag ("--tp-overlap") for the CLI,
/// the key ("tp_comm_overlap") for files and Python, the name ("TP overlap") for the library.
/// A `{key}` of no field in `words` is a field of another request: the CLI writes "--key" with
/// dashes, the others "key". Braces around anything but a lowercase identifier are left alone;
/// `{{` (the user's text in a message, base::verbatim) is written as one `{`.
std::string render(std::string_view text, const std::vector<FieldWord>& words, Door door);

/// The key of the field a message is about: `{key}` at its start, else empty.
std::string leading_key(std::string_view message);

/// Checks a value against a field's range or choices; the message names the field ("{tp}: ...").
template <class R>
base::Status check_field(const Field<R>& f, const R& r) {
  auto bad = [&](const std::string& why) { return base::fail("{" + f.key + "}: " + why); };
  if (const auto* m = std::get_if<int R::*>(&f.member)) {
    if (auto st = base::check_integer(r.**m, f.ints); !st) return bad(st.error().message);
  } else if (const auto* m64 = std::get_if<int64_t R::*>(&f.member)) {
    if (auto st = base::check_integer(r.**m64, f.ints); !st) return bad(st.error().message);
  } else if (const auto* d = std::get_if<double R::*>(&f.member)) {
    if (auto st = base::check_real(r.**d, f.reals); !st) return bad(st.error().message);
  } else if (const auto* s = std::get_if<std::string R::*>(&f.member); s && !f.choices.empty()) {
    const std::string& v = r.**s;
    bool ok = false;
    for (const auto& c : f.choices) ok = ok || c == v;
    if (!ok) {
      std::string list;
      for (size_t i = 0; i < f.choices.size(); ++i) {
        list += (i == 0 ? "" : i + 1 == f.choices.size() ? " or " : ", ") + f.choices[i];
      }
      return bad("expected " + list + ", got '" + v + "'");
    }
  }
  return {};
}

/// Checks every field of `tables` against its range and choices (check_field), except a field at
/// its default: that is the default rule ("0: the whole cluster", "-1: none"), not a value. The
/// CLI and the scenario reader check as they read; the Python door and library callers through
/// this. Messages name the field.
template <class R>
base::Status check_fields(const R& r, FieldTables<R> tables) {
  const R defaults;
  for (const auto* table : tables) {
    for (const auto& f : *table) {
      if (std::visit([&](auto m) { return r.*m == defaults.*m; }, f.member)) continue;
      if (auto st = check_field(f, r); !st) return st;
    }
  }
  return {};
}

/// The rows every request that runs on a cluster starts with: `cluster` (the CLI's and Python's;
/// a scenario file names it at the top), `gpus` and `model`. R has members of these names.
template <class R>
FieldTable<R> cluster_rows(std::string gpus_help, std::string model_help) {
  return {Field<R>{.key = "cluster",
                   .flag = "cluster",
                   .name = "cluster",
                   .member = &R::cluster,
                   .help = "catalog name, cluster file or SYSTEM*COUNT",
                   .show_default = true,
                   .in_file = false},
          Field<R>{.key = "gpus",
                   .flag = "gpus",
                   .name = "gpus",
                   .member = &R::gpus,
                   .help = std::move(gpus_help),
                   .ints = positive(base::kMaxGpus)},
          Field<R>{.key = "model",
                   .flag = "model",
                   .name = "model",
                   .member = &R::model,
                   .help = std::move(model_help),
                   .show_default = true}};
}

/// The power view's switch and GPU power limit (`power`, `power_cap`), as training and serving
/// requests carry them. R has members of these names.
template <class R>
FieldTable<R> power_view_rows(std::string power_help, std::string cap_help) {
  return {Field<R>{.key = "power",
                   .flag = "power",
                   .name = "power view",
                   .member = &R::power,
                   .help = std::move(power_help)},
          Field<R>{.key = "power_cap",
                   .flag = "power-cap",
                   .name = "power cap",
                   .member = &R::power_cap,
                   .help = std::move(cap_help)}};
}

/// The rows of several tables, in order, as one table.
template <class R>
FieldTable<R> join(std::initializer_list<FieldTable<R>> parts) {
  FieldTable<R> t;
  for (const auto& p : parts) t.insert(t.end(), p.begin(), p.end());
  return t;
}

/// Reads the fields of `table` that a scenario file gives (`in_file`) from one workload block
/// into `r`, with the table's checks; a key the file leaves out keeps the request's value. Errors
/// land in the reader's context with file:line. Returns the line of every key given.
template <class R>
std::vector<std::pair<std::string, int>> read_fields(config::Reader& in, const FieldTable<R>& table,
                                                     R& r) {
  using Need = config::Reader::Need;
  std::vector<std::pair<std::string, int>> lines;
  for (const auto& f : table) {
    if (!f.in_file) continue;
    if (!in.has(f.key)) {
      in.allow(f.key);  // known, so that a misspelt key is told the field it meant
      continue;
    }
    lines.emplace_back(f.key, in.line(f.key));
    if (const auto* m = std::get_if<int R::*>(&f.member)) {
      if (auto v = in.integer(f.key, Need::kOptional, f.ints.min, f.ints.max)) {
        r.** m = static_cast<int>(*v);
      }
    } else if (const auto* m64 = std::get_if<int64_t R::*>(&f.member)) {
      if (auto v = in.integer(f.key, Need::kOptional, f.ints.min, f.ints.max)) r.** m64 = *v;
    } else if (const auto* d = std::get_if<double R::*>(&f.member)) {
      if (auto v = in.number(f.key, Need::kOptional, f.reals.min, f.reals.max)) {
        if (f.reals.min_exclusive && !(*v > f.reals.min)) {
          in.error("expected " + base::describe_range(f.reals), f.key);
        } else {
          r.** d = *v;
        }
      }
    } else if (const auto* s = std::get_if<std::string R::*>(&f.member)) {
      auto v = f.choices.empty() ? in.string(f.key, Need::kOptional)
                                 : in.choice(f.key, f.choices, Need::kOptional);
      // "" is how a request says "not given": a key written with it would be dropped silently.
      if (v && v->empty()) {
        in.error("empty value (give one, or leave the key out for its default)", f.key);
      } else if (v) {
        r.** s = *v;
      }
    } else if (const auto* b = std::get_if<bool R::*>(&f.member)) {
      if (auto v = in.boolean(f.key, Need::kOptional)) r.** b = f.inverted ? !*v : *v;
    }
  }
  return lines;
}

}  // namespace clustertwin::scenario
