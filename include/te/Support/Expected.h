//===- Expected.h - Success-or-message results ------------------*- C++ -*-===//
//
// te::support is used by tools that must report every bad input file with a
// precise message and keep going (or exit cleanly), and it links no LLVM, so
// errors travel as values: `Status` for operations without a result and
// `Expected<T>` for those with one. Nothing in the library throws.
//
//===----------------------------------------------------------------------===//

#ifndef TE_SUPPORT_EXPECTED_H
#define TE_SUPPORT_EXPECTED_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace te::support {

/// Success, or failure with a message that names the file or value involved
/// and what is wrong with it, and optionally a code: what kind of failure
/// it is, for callers that must act on the kind (an API mapping failures to
/// its status codes) without reading the message. The codes are the
/// caller's own enum; 0 means "not given".
class [[nodiscard]] Status {
public:
  static Status success() { return Status(); }
  static Status error(std::string message, int code = 0) {
    assert(!message.empty() && "an error needs a message");
    Status status;
    status.message_ = std::move(message);
    status.code_ = code;
    return status;
  }

  bool ok() const { return message_.empty(); }
  explicit operator bool() const { return ok(); }
  /// The error message; empty on success.
  const std::string &message() const { return message_; }
  /// The kind of failure given with the error; 0 on success or when none
  /// was given.
  int code() const { return code_; }

private:
  Status() = default;
  std::string message_;
  int code_ = 0;
};

/// A value of type T, or the message of the failure that prevented it.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : value_(std::move(value)) {}
  Expected(Status error) : message_(error.message()), code_(error.code()) {
    assert(!error.ok() && "an Expected without a value needs an error");
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  /// The error message; empty on success.
  const std::string &message() const { return message_; }
  /// The kind of failure (Status::code); 0 on success.
  int code() const { return code_; }
  /// The error as a Status, to pass a failure up unchanged.
  Status status() const {
    return ok() ? Status::success() : Status::error(message_, code_);
  }

  T &operator*() {
    assert(ok() && "dereferencing a failed Expected");
    return *value_;
  }
  const T &operator*() const {
    assert(ok() && "dereferencing a failed Expected");
    return *value_;
  }
  T *operator->() { return &**this; }
  const T *operator->() const { return &**this; }

private:
  std::optional<T> value_;
  std::string message_;
  int code_ = 0;
};

} // namespace te::support

#endif // TE_SUPPORT_EXPECTED_H
