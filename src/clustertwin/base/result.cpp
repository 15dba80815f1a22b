#include "clustertwin/base/result.h"

namespace clustertwin::base {

std::string Error::to_string() const {
  if (file.empty()) return message;
  if (line > 0) return file + ":" + std::to_string(line) + ": " + message;
  return file + ": " + message;
}

std::string Errors::to_string() const {
  std::string out;
  for (const auto& e : items) {
    if (!out.empty()) out += '\n';
    out += "error: " + e.to_string();
  }
  return out;
}

Error Errors::combined() const {
  if (items.size() == 1) return items.front();
  std::string msg;
  ErrorKind kind = ErrorKind::kInput;
  for (const auto& e : items) {
    if (!msg.empty()) msg += "\nerror: ";
    msg += e.to_string();
    if (e.kind == ErrorKind::kSystem) kind = ErrorKind::kSystem;
  }
  return Error{msg, {}, 0, kind};
}

}  // namespace clustertwin::base
