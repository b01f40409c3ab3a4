// NCCL loaded with dlopen: see nccl.hpp.
#include "devices/cuda/nccl.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <utility>

namespace tfc::internal::cuda {
namespace {

constexpr const char* kDefaultLibrary = "libnccl.so.2";
constexpr const char* kEnvironmentVariable = "TFC_NCCL_LIBRARY";

Status loadError(std::string message) { return Status(TFC_FAILED_PRECONDITION, message); }

}  // namespace

StatusOr<std::unique_ptr<Nccl>> loadNcclFrom(const std::string& path, bool fromEnvironment) {
  const std::string label =
      fromEnvironment ? fmt::format("{}={}", kEnvironmentVariable, path) : path;
  std::string reason;
  void* library = openLibrary(path, &reason);
  if (library == nullptr) return loadError(fmt::format("{} not loadable: {}", label, reason));
  auto nccl = std::make_unique<Nccl>();
  nccl->path = path;
  nccl->library = library;
  auto resolve = [&](auto& slot, const char* symbol) -> Status {
    if (resolveSymbol(library, symbol, slot)) return Status();
    return loadError(
        fmt::format("{}: lacks {} (not NCCL, or one older than 2.10?)", label, symbol));
  };
  auto resolveAll = [&]() -> Status {
#define TFC_NCCL_RESOLVE_(name, signature) TFC_RETURN_IF_ERROR(resolve(nccl->name, #name));
    TFC_NCCL_FUNCTIONS(TFC_NCCL_RESOLVE_)
#undef TFC_NCCL_RESOLVE_
    return Status();
  };
  Status status = resolveAll();
  if (status.ok() && nccl->ncclGetVersion(&nccl->version) != ncclSuccess) {
    status = loadError(fmt::format("{}: ncclGetVersion failed", label));
  }
  if (status.ok() && nccl->version < kMinNcclVersion) {
    status =
        loadError(fmt::format("{}: NCCL {} is older than {}, which tfc needs (ncclAvg)", label,
                              ncclVersionText(nccl->version), ncclVersionText(kMinNcclVersion)));
  }
  if (!status.ok()) {
    // Nothing of it is in use: a library that is not a usable NCCL is unloaded.
    dlclose(library);
    return status;
  }
  return nccl;
}

std::string ncclVersionText(int version) {
  // NCCL_VERSION(X, Y, Z): X * 1000 + Y * 100 + Z up to 2.8, X * 10000 + Y * 100 + Z after.
  if (version >= 10000) {
    return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
  }
  return fmt::format("{}.{}.{}", version / 1000, version / 100 % 10, version % 100);
}

Status checkNccl(const Nccl& nccl, ncclResult_t result, const std::string& what) {
  if (result == ncclSuccess) return Status();
  const char* text = nccl.ncclGetErrorString(result);
  return loadError(
      fmt::format("{}: {} (NCCL error {})", what, text != nullptr ? text : "?", result));
}

StatusOr<const Nccl*> loadNccl() {
  return loadOnce<Nccl>(kEnvironmentVariable, kDefaultLibrary, loadNcclFrom);
}

}  // namespace tfc::internal::cuda
