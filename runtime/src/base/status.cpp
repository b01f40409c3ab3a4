#include "tfc/runtime/status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tfc/runtime/status.hpp"

// The message is stored right after the struct, in the same allocation.
struct tfc_status_s {
  tfc_status_code_t code;
  const char* message;
};

namespace {

// Returned when a status cannot be allocated; never freed.
tfc_status_s kOutOfMemoryStatus = {TFC_OUT_OF_MEMORY, "out of memory while reporting an error"};

tfc_status_t allocateStatus(tfc_status_code_t code, const char* message, size_t length) {
  void* memory = std::malloc(sizeof(tfc_status_s) + length + 1);
  if (memory == nullptr) return &kOutOfMemoryStatus;
  auto* status = static_cast<tfc_status_s*>(memory);
  char* text = reinterpret_cast<char*>(status + 1);
  if (length > 0) std::memcpy(text, message, length);
  text[length] = '\0';
  status->code = code;
  status->message = text;
  return status;
}

}  // namespace

extern "C" {

tfc_status_code_t tfc_status_code(tfc_status_t status) {
  return status == nullptr ? TFC_OK : status->code;
}

const char* tfc_status_message(tfc_status_t status) {
  return status == nullptr ? "" : status->message;
}

void tfc_status_free(tfc_status_t status) {
  if (status != nullptr && status != &kOutOfMemoryStatus) std::free(status);
}

const char* tfc_status_code_string(tfc_status_code_t code) {
  switch (code) {
    case TFC_OK: return "OK";
    case TFC_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case TFC_NOT_FOUND: return "NOT_FOUND";
    case TFC_IO_ERROR: return "IO_ERROR";
    case TFC_DATA_LOSS: return "DATA_LOSS";
    case TFC_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case TFC_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case TFC_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case TFC_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN";
}

// printf-style (see Status::error in status.hpp for why), so vsnprintf formats the message.
tfc_status_t tfc_status_make_v(tfc_status_code_t code, const char* format, va_list args) {
  if (code == TFC_OK) return nullptr;
  // Format once into a stack buffer; only long messages need a second pass.
  char buffer[512];
  va_list copy;
  va_copy(copy, args);
  int length = std::vsnprintf(buffer, sizeof(buffer), format, copy);
  va_end(copy);
  if (length < 0) {
    static const char kBadFormat[] = "(error message could not be formatted)";
    return allocateStatus(code, kBadFormat, sizeof(kBadFormat) - 1);
  }
  if (static_cast<size_t>(length) < sizeof(buffer)) {
    return allocateStatus(code, buffer, static_cast<size_t>(length));
  }
  char* big = static_cast<char*>(std::malloc(static_cast<size_t>(length) + 1));
  if (big == nullptr) return &kOutOfMemoryStatus;
  std::vsnprintf(big, static_cast<size_t>(length) + 1, format, args);
  tfc_status_t status = allocateStatus(code, big, static_cast<size_t>(length));
  std::free(big);
  return status;
}

tfc_status_t tfc_status_make(tfc_status_code_t code, const char* format, ...) {
  va_list args;
  va_start(args, format);
  tfc_status_t status = tfc_status_make_v(code, format, args);
  va_end(args);
  return status;
}

}  // extern "C"

namespace tfc {

Status::Status(tfc_status_code_t code, std::string_view message)
    : status_(code == TFC_OK ? nullptr : allocateStatus(code, message.data(), message.size())) {}

Status Status::error(tfc_status_code_t code, const char* format, ...) {
  va_list args;
  va_start(args, format);
  tfc_status_t status = tfc_status_make_v(code, format, args);
  va_end(args);
  return Status(status);
}

std::string Status::toString() const {
  if (ok()) return "OK";
  std::string text = tfc_status_code_string(code());
  text += ": ";
  text += message();
  return text;
}

namespace internal {
void abortWithStatus(const char* what, const Status& status) {
  // fprintf, not fmt::print: this must reach abort() whatever happens, and fmt::print throws
  // when stderr cannot be written.
  std::fprintf(stderr, "tfc: %s: %s\n", what, status.toString().c_str());
  std::abort();
}
}  // namespace internal

}  // namespace tfc
