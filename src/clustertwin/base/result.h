#pragma once
/// Errors as values at the edges (STYLE.md): bad user input and impossible requests travel as
/// `Result<T>`; broken invariants abort through CT_CHECK (check.h). The member names follow
/// `std::expected` so that the type can be swapped once the toolchain has it.

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace clustertwin::base {

/// Whose fault an error is: the input's (exit 2) or the system's (a write that failed, a disk
/// that is full: exit 1, DESIGN.md §4).
enum class ErrorKind { kInput, kSystem };

/// One user-facing error: where (file and 1-based line, when known) and what, in a sentence that
/// starts lowercase and says expected vs actual.
struct Error {
  std::string message;
  std::string file;  ///< empty when the error has no file
  int line = 0;      ///< 1-based; 0 when unknown
  ErrorKind kind = ErrorKind::kInput;

  /// "file:line: message", "file: message" or "message".
  [[nodiscard]] std::string to_string() const;
};

/// Several errors of one input, reported together ("all errors of a file at once").
struct Errors {
  std::vector<Error> items;
  void add(Error e) { items.push_back(std::move(e)); }
  [[nodiscard]] bool empty() const { return items.empty(); }
  /// All errors, one per line, each prefixed "error: ".
  [[nodiscard]] std::string to_string() const;
  /// The errors folded into one Error (message holds every line) for a Result.
  [[nodiscard]] Error combined() const;
};

struct Unexpected {
  Error error;
};

/// Convenience: `return fail("...")` from a function returning Result<T>.
inline Unexpected fail(std::string message, std::string file = {}, int line = 0) {
  return Unexpected{Error{std::move(message), std::move(file), line}};
}
inline Unexpected fail(Error e) { return Unexpected{std::move(e)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Unexpected u) : v_(std::move(u.error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  [[nodiscard]] const Error& error() const { return std::get<1>(v_); }
  [[nodiscard]] T value_or(T other) const { return has_value() ? value() : std::move(other); }

 private:
  std::variant<T, Error> v_;
};

/// Result of an operation with no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Unexpected u) : error_(std::move(u.error)), ok_(false) {}  // NOLINT
  [[nodiscard]] bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  [[nodiscard]] const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace clustertwin::base
