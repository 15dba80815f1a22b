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
  bool in_file = true;  ///< read from a workload block (false: the scenario sets it elsewhere)
};

template <class R>
using FieldTable = std::vector<Field<R>>;

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

/// `text` with every `{key}` written in the door's word: the flag ("--tp-overlap") for the CLI,
/// the key ("tp_comm_overlap") for files and Python, the name ("TP overlap") for the library.
/// A `{key}` of no field in `words` is a field of another request: the CLI writes "--key" with
/// dashes, the others "key". Braces around anything but a lowercase identifier are left alone.
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

/// Reads the fields of `table` that a scenario file gives (`in_file`) from one workload block
/// into `r`, with the table's checks; a key the file leaves out keeps the request's value. Errors
/// land in the reader's context with file:line. Returns the line of every key given.
template <class R>
std::vector<std::pair<std::string, int>> read_fields(config::Reader& in, const FieldTable<R>& table,
                                                     R& r) {
  using Need = config::Reader::Need;
  std::vector<std::pair<std::string, int>> lines;
  for (const auto& f : table) {
    if (!f.in_file || !in.has(f.key)) continue;
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
      if (v) r.** s = *v;
    } else if (const auto* b = std::get_if<bool R::*>(&f.member)) {
      if (auto v = in.boolean(f.key, Need::kOptional)) r.** b = f.inverted ? !*v : *v;
    }
  }
  return lines;
}

}  // namespace clustertwin::scenario
