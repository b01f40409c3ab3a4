// cuBLASLt loaded with dlopen: see cublaslt.hpp.
#include "devices/cuda/cublaslt.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <utility>

namespace tfc::internal::cuda {
namespace {

constexpr const char* kEnvironmentVariable = "TFC_CUBLASLT_LIBRARY";
// CUDA 13's, CUDA 12's (the same API for what tfc uses), then the toolkit's usual place,
// which the loader's search path often lacks.
constexpr const char* kDefaultLibraries[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                             "/usr/local/cuda/lib64/libcublasLt.so"};

Status loadError(std::string message) { return Status(TFC_FAILED_PRECONDITION, message); }

// loadOnce's loader for the default names: the first that loads, else every reason.
StatusOr<std::unique_ptr<CublasLt>> loadDefault(const std::string& path, bool fromEnvironment) {
  if (fromEnvironment || !path.empty()) return loadCublasLtFrom(path, fromEnvironment);
  std::string names;
  for (const char* name : kDefaultLibraries) {
    auto lt = loadCublasLtFrom(name, false);
    if (lt.ok()) return lt;
    names += std::string(names.empty() ? "" : ", ") + name;
  }
  return loadError(fmt::format("no cuBLASLt: none of {} loads; set {} to its path", names,
                               kEnvironmentVariable));
}

}  // namespace

StatusOr<std::unique_ptr<CublasLt>> loadCublasLtFrom(const std::string& path,
                                                     bool fromEnvironment) {
  const std::string label =
      fromEnvironment ? fmt::format("{}={}", kEnvironmentVariable, path) : path;
  std::string reason;
  void* library = openLibrary(path, &reason);
  if (library == nullptr) return loadError(fmt::format("{} not loadable: {}", label, reason));
  auto lt = std::make_unique<CublasLt>();
  lt->path = path;
  lt->library = library;
  auto resolve = [&](auto& slot, const char* symbol) -> Status {
    if (resolveSymbol(library, symbol, slot)) return Status();
    return loadError(fmt::format("{}: lacks {} (not cuBLASLt?)", label, symbol));
  };
  auto resolveAll = [&]() -> Status {
#define TFC_CUBLASLT_RESOLVE_(name, signature) TFC_RETURN_IF_ERROR(resolve(lt->name, #name));
    TFC_CUBLASLT_FUNCTIONS(TFC_CUBLASLT_RESOLVE_)
#undef TFC_CUBLASLT_RESOLVE_
    return Status();
  };
  Status status = resolveAll();
  if (status.ok()) {
    lt->version = lt->cublasLtGetVersion();
    if (lt->version < kMinCublasLtVersion) {
      status = loadError(fmt::format("{}: cuBLASLt {} is older than {}, which tfc needs", label,
                                     cublasLtVersionText(lt->version),
                                     cublasLtVersionText(kMinCublasLtVersion)));
    }
  }
  if (!status.ok()) {
    dlclose(library);  // nothing of it is in use
    return status;
  }
  return lt;
}

std::string cublasLtVersionText(size_t version) {
  return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
}

Status checkCublasLt(const CublasLt& lt, cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status();
  const char* text = lt.cublasLtGetStatusString(status);
  return Status(TFC_INTERNAL, fmt::format("{}: {} (cuBLASLt status {})", what,
                                          text != nullptr ? text : "?", status));
}

StatusOr<const CublasLt*> loadCublasLt() {
  return loadOnce<CublasLt>(kEnvironmentVariable, "", loadDefault);
}

}  // namespace tfc::internal::cuda
