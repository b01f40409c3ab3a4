// C++ wrappers over tfc_status_t: an owning Status, StatusOr<T>, and the
// TFC_RETURN_IF_ERROR / TFC_ASSIGN_OR_RETURN macros used throughout the runtime.
//
// Thread-safety: Status and StatusOr are plain values; they are not synchronized.
#ifndef TFC_RUNTIME_STATUS_HPP_
#define TFC_RUNTIME_STATUS_HPP_

#include <cstdarg>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tfc/runtime/status.h"

namespace tfc {

// An owning, move-only handle to a tfc_status_t. A default-constructed Status is OK.
class [[nodiscard]] Status {
 public:
  Status() = default;
  // Takes ownership of |status| (NULL means OK).
  explicit Status(tfc_status_t status) : status_(status) {}
  // Makes an error with |code| and |message| (an OK status when code is TFC_OK).
  Status(tfc_status_code_t code, std::string_view message);
  ~Status() { tfc_status_free(status_); }

  Status(Status&& other) noexcept : status_(std::exchange(other.status_, nullptr)) {}
  Status& operator=(Status&& other) noexcept {
    if (this != &other) {
      tfc_status_free(status_);
      status_ = std::exchange(other.status_, nullptr);
    }
    return *this;
  }
  Status(const Status&) = delete;
  Status& operator=(const Status&) = delete;

  // Makes an error with |code| and a printf-style message.
  //
  // printf-style on purpose, and staying so: this is public API (embedders and tfc-run call
  // it), it mirrors the C API's tfc_status_make, and the compiler checks its arguments
  // through TFC_PRINTF_FORMAT. fmt is private to the runtime's sources (no public header
  // includes it), so an fmt-style sibling here would make fmt a dependency of every
  // embedder. Inside the runtime, where printf's formats do not suffice, build the message
  // with fmt::format and pass it to Status(code, message).
  static Status error(tfc_status_code_t code, const char* format, ...) TFC_PRINTF_FORMAT(2, 3);

  bool ok() const { return status_ == nullptr; }
  tfc_status_code_t code() const { return tfc_status_code(status_); }
  // The message; "" for OK. Owned by this Status.
  const char* message() const { return tfc_status_message(status_); }
  // "OK" or "DATA_LOSS: <message>", for logs and test failures.
  std::string toString() const;

  // Hands the underlying status to a C caller, leaving this Status OK.
  tfc_status_t release() { return std::exchange(status_, nullptr); }

 private:
  tfc_status_t status_ = nullptr;
};

// Either a value of type T or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
  static_assert(!std::is_same_v<std::decay_t<T>, Status>, "StatusOr<Status> is meaningless");

 public:
  // Holds |value|.
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  // Holds the error |status|. An OK status here is a bug, turned into TFC_INTERNAL so that
  // it cannot be mistaken for a value.
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status(TFC_INTERNAL, "StatusOr constructed from an OK Status");
  }

  StatusOr(StatusOr&&) = default;
  StatusOr& operator=(StatusOr&&) = default;

  bool ok() const { return value_.has_value(); }
  // The error (OK when a value is held).
  const Status& status() const& { return status_; }
  // Moves the error out (OK when a value is held).
  Status takeStatus() && { return std::move(status_); }

  // Accessors; calling them on an error is a programming error and aborts.
  T& value() & { checkHasValue(); return *value_; }
  const T& value() const& { checkHasValue(); return *value_; }
  T&& value() && { checkHasValue(); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void checkHasValue() const {
    if (!value_.has_value()) abortOnError(status_);
  }
  [[noreturn]] static void abortOnError(const Status& status);

  Status status_;
  std::optional<T> value_;
};

namespace internal {
[[noreturn]] void abortWithStatus(const char* what, const Status& status);
}  // namespace internal

template <typename T>
void StatusOr<T>::abortOnError(const Status& status) {
  internal::abortWithStatus("StatusOr::value() called on an error", status);
}

}  // namespace tfc

#define TFC_STATUS_CONCAT_INNER_(a, b) a##b
#define TFC_STATUS_CONCAT_(a, b) TFC_STATUS_CONCAT_INNER_(a, b)

// Evaluates |expr| (a tfc::Status) and returns it from the enclosing function if it is an
// error. Works in functions returning Status or StatusOr<T>.
#define TFC_RETURN_IF_ERROR(expr)                             \
  do {                                                        \
    ::tfc::Status tfc_status_macro_value_ = (expr);           \
    if (!tfc_status_macro_value_.ok()) {                      \
      return tfc_status_macro_value_;                         \
    }                                                         \
  } while (false)

// Evaluates |expr| (a StatusOr<T>); on error returns its status from the enclosing
// function, otherwise moves the value into |lhs| (which may be a declaration such as
// `auto x`).
#define TFC_ASSIGN_OR_RETURN(lhs, expr) \
  TFC_ASSIGN_OR_RETURN_IMPL_(TFC_STATUS_CONCAT_(tfc_status_or_value_, __LINE__), lhs, expr)
#define TFC_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).takeStatus(); \
  lhs = std::move(tmp).value()

#endif  // TFC_RUNTIME_STATUS_HPP_
