// Status and Result<T>: how every paratune module reports failure. No exception crosses a module
// boundary; adapters around throwing libraries (yaml-cpp, nlohmann_json, cpprestsdk) catch and
// convert. Cheap to copy when ok (no allocation).
#ifndef PARATUNE_BASE_STATUS_H_
#define PARATUNE_BASE_STATUS_H_

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace paratune {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad input; the message names the field. Not retried.
  kNotFound,            // HTTP 404, unknown preset, missing file.
  kAlreadyExists,       // HTTP 409 on create.
  kConflict,            // HTTP 409 on update: re-read and retry.
  kGone,                // HTTP 410: a watch's resourceVersion is too old; relist.
  kUnavailable,         // HTTP 429/5xx, connection refused: retry with backoff.
  kPermissionDenied,    // HTTP 403.
  kUnauthenticated,     // HTTP 401.
  kDeadlineExceeded,    // a timeout.
  kResourceExhausted,   // a budget (calls, tokens, trials) is used up.
  kFailedPrecondition,  // the system is not in a state where the call makes sense.
  kInternal,            // a bug or an unexpected library failure.
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status Invalid(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Conflict(std::string m) { return {StatusCode::kConflict, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status Exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status Deadline(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
  static Status Precondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: spec.budget.maxTrials: must be >= 1", or "OK".
  std::string ToString() const;
  // A copy whose message is "prefix: message" (for adding context on the way up). Keeps the
  // terminal mark.
  Status WithPrefix(const std::string& prefix) const;

  // A copy marked terminal, as controller-runtime's reconcile.TerminalError: a reconcile that
  // returns it is recorded as an error and its key is not retried, because no retry can help
  // (a stored object that cannot be read, a spec the reconciler cannot act on). Every other
  // error, kInvalidArgument included (an API server's 400/422 may pass once the object is
  // re-read), is retried with the rate-limited backoff. An ok status stays ok.
  Status AsTerminal() const;
  bool terminal() const { return terminal_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  bool terminal_ = false;
};

// Either a value or a non-ok Status. Accessing value() of an error is a bug (asserts).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}         // NOLINT: implicit by design.
  Result(Status status) : data_(std::move(status)) {}  // NOLINT: must not be ok.

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(data_);
  }
  const T& value() const& { return std::get<T>(data_); }
  T& value() & { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace paratune

// Returns the status from the enclosing function when it is not ok.
#define PARATUNE_RETURN_IF_ERROR(expr) \
  do {                                 \
    ::paratune::Status _st = (expr);   \
    if (!_st.ok()) return _st;         \
  } while (0)

#endif  // PARATUNE_BASE_STATUS_H_
