// SPDX-License-Identifier: Apache-2.0
// Status and Expected<T>: the error-return types of every zbkit library API.
//
// Library code never throws across its public API and never prints; it returns a Status that
// carries a category and a one-line message naming the file/field at fault. Front ends (the `zb`
// command) map the category to an exit code: kUsage -> 2, everything else -> 1.
#ifndef ZBKIT_SCHEMAS_STATUS_H_
#define ZBKIT_SCHEMAS_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace zb {

enum class ErrorCode {
  kOk = 0,
  kUsage,         // the request itself is malformed: bad flag value, unknown family, m too small
  kInvalidInput,  // an input file or record is malformed or violates a constraint
  kNotFound,      // a named file, schedule or record does not exist
  kIo,            // reading or writing a file failed
  kStore,         // the SQLite store failed (open, schema, constraint, busy)
  kInfeasible,    // the request is well formed but has no solution (e.g. nothing fits the cap)
  kInternal,      // a bug: an invariant of zbkit itself did not hold
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<context>: <message>", for adding the file name or field
  // path on the way up without losing the original category.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status UsageError(std::string message) {
  return {ErrorCode::kUsage, std::move(message)};
}
inline Status InvalidInput(std::string message) {
  return {ErrorCode::kInvalidInput, std::move(message)};
}
inline Status NotFound(std::string message) {
  return {ErrorCode::kNotFound, std::move(message)};
}
inline Status IoError(std::string message) {
  return {ErrorCode::kIo, std::move(message)};
}
inline Status StoreError(std::string message) {
  return {ErrorCode::kStore, std::move(message)};
}
inline Status Infeasible(std::string message) {
  return {ErrorCode::kInfeasible, std::move(message)};
}
inline Status InternalError(std::string message) {
  return {ErrorCode::kInternal, std::move(message)};
}

// Exit code convention of every zbkit command: 0 success, 2 usage, 1 any other failure.
inline int ExitCodeFor(const Status& status) {
  if (status.ok()) return 0;
  return status.code() == ErrorCode::kUsage ? 2 : 1;
}

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design, like StatusOr
  Expected(Status status) : data_(std::move(status)) {
    assert(!std::get<Status>(data_).ok() && "Expected built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace zb

#define ZB_STATUS_CONCAT_INNER(a, b) a##b
#define ZB_STATUS_CONCAT(a, b) ZB_STATUS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define ZB_RETURN_IF_ERROR(expr)                     \
  do {                                               \
    ::zb::Status zb_status_tmp_ = (expr);            \
    if (!zb_status_tmp_.ok()) return zb_status_tmp_; \
  } while (0)

// `ZB_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from an Expected or returns its Status.
#define ZB_ASSIGN_OR_RETURN(lhs, expr) \
  ZB_ASSIGN_OR_RETURN_IMPL(ZB_STATUS_CONCAT(zb_expected_, __LINE__), lhs, expr)
#define ZB_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

#endif  // ZBKIT_SCHEMAS_STATUS_H_
