#pragma once
/// The CLI door of a request's field table (scenario/fields.h): one CLI11 option per field, with
/// the field's flag, help (other fields named by their flags), check and default. Numbers go
/// through the checked parsing of flags.h, so "--tp 12abc" and "--zero 010" are refused as
/// before.

#include <CLI/CLI.hpp>
#include <type_traits>
#include <variant>

#include "clustertwin/scenario/fields.h"
#include "flags.h"

namespace clustertwin::app {

/// One of a field's choices, with the library's message ("--scenario: expected offline, server or
/// interactive, got 'batch'"); --help and docs/cli.md show "{offline,server,interactive}".
inline CLI::Validator one_of(const std::vector<std::string>& choices) {
  std::string shown, list;
  for (size_t i = 0; i < choices.size(); ++i) {
    shown += (i == 0 ? "" : ",") + choices[i];
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  }
  return CLI::Validator(
      [choices, list](std::string& text) -> std::string {
        for (const auto& c : choices) {
          if (c == text) return {};
        }
        return "expected " + list + ", got '" + text + "'";
      },
      "{" + shown + "}");
}

template <class R>
void add_fields(CLI::App* cmd, const scenario::FieldTable<R>& table, R& request,
                const std::vector<scenario::FieldWord>& words) {
  for (const auto& f : table) {
    const std::string flag = "--" + f.flag + (f.short_flag.empty() ? "" : ",-" + f.short_flag);
    const std::string help = scenario::render(f.help, words, scenario::Door::kCli);
    std::visit(
        [&](auto member) {
          auto& target = request.*member;
          using T = std::remove_reference_t<decltype(target)>;
          if constexpr (std::is_same_v<T, bool>) {
            cmd->add_flag(flag, target, help);
          } else {
            CLI::Option* opt = cmd->add_option(flag, target, help);
            if constexpr (std::is_arithmetic_v<T>) {
              opt->check(flags::detail::make<T>(f.ints, f.reals));
            } else if (!f.choices.empty()) {
              opt->check(one_of(f.choices));
            }
            if (f.show_default) opt->capture_default_str();
          }
        },
        f.member);
  }
}

}  // namespace clustertwin::app
