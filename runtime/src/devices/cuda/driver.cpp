// The CUDA driver API loaded with dlopen: see driver.hpp.
#include "devices/cuda/driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

namespace tfc::internal::cuda {
namespace {

constexpr const char* kDefaultLibrary = "libcuda.so.1";
constexpr const char* kEnvironmentVariable = "TFC_CUDA_DRIVER";

// Older exported names to fall back on when a driver lacks the newer one and the two share
// a signature: cuEventElapsedTime_v2 came with CUDA 12.8, and differs from cuEventElapsedTime
// only for events that tfc does not create.
const char* fallbackSymbol(const char* symbol) {
  if (std::strcmp(symbol, "cuEventElapsedTime_v2") == 0) return "cuEventElapsedTime";
  return nullptr;
}

// Where the library came from, for the messages: "libcuda.so.1" or
// "TFC_CUDA_DRIVER=/path/libcuda.so.1".
std::string libraryLabel(const std::string& path, bool fromEnvironment) {
  return fromEnvironment ? fmt::format("{}={}", kEnvironmentVariable, path) : path;
}

Status loadError(std::string message) {
  return Status(TFC_FAILED_PRECONDITION, message);
}

}  // namespace

std::string describe(const Driver& driver, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (driver.cuGetErrorName == nullptr || driver.cuGetErrorName(result, &name) != CUDA_SUCCESS ||
      name == nullptr) {
    return fmt::format("CUDA error {}", result);
  }
  if (driver.cuGetErrorString == nullptr ||
      driver.cuGetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr) {
    return name;
  }
  return fmt::format("{} ({})", name, text);
}

Status check(const Driver& driver, CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return Status();
  tfc_status_code_t code = TFC_FAILED_PRECONDITION;
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      code = TFC_OUT_OF_MEMORY;
      break;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      code = TFC_INTERNAL;
      break;
    default:
      break;
  }
  return Status(code, fmt::format("{}: {}", what, describe(driver, result)));
}

void* dlsymOf(void* library, const char* symbol) { return dlsym(library, symbol); }

void* openLibrary(const std::string& path, std::string* reason) {
  dlerror();
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    *reason = why != nullptr ? why : "unknown dlopen error";
  }
  return library;
}

StatusOr<std::unique_ptr<Driver>> loadDriverFrom(const std::string& path, bool fromEnvironment) {
  const std::string label = libraryLabel(path, fromEnvironment);
  std::string reason;
  void* library = openLibrary(path, &reason);
  if (library == nullptr) {
    if (fromEnvironment) {
      return loadError(fmt::format(
          "cannot load the CUDA driver named by {}: {}; set {} to the path of a libcuda.so.1, "
          "or unset it to use the system's",
          label, reason, kEnvironmentVariable));
    }
    return loadError(fmt::format(
        "no NVIDIA driver found ({} not loadable: {}); a CUDA artifact (tfc --target=cuda) "
        "needs one. A CPU artifact (`tfc model.mlir -o model.so` without --target=cuda) runs "
        "without it",
        path, reason));
  }

  auto driver = std::make_unique<Driver>();
  driver->path = path;
  driver->library = library;
  // Resolves |symbol| (or its fallback) into |slot|.
  auto resolve = [&](auto& slot, const char* symbol) -> Status {
    void* address = dlsym(library, symbol);
    if (address == nullptr) {
      if (const char* older = fallbackSymbol(symbol)) address = dlsym(library, older);
    }
    if (address == nullptr) {
      return loadError(fmt::format(
          "{}: the CUDA driver lacks {} (not a CUDA driver, or one too old? tfc needs CUDA 12 or "
          "newer: update the NVIDIA driver)",
          label, symbol));
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
    return Status();
  };
  // Nothing of the library has run yet, so a library that is not a usable driver is unloaded.
  auto resolveAll = [&]() -> Status {
#define TFC_CUDA_RESOLVE_(member, symbol, signature) \
  TFC_RETURN_IF_ERROR(resolve(driver->member, #symbol));
    TFC_CUDA_DRIVER_FUNCTIONS(TFC_CUDA_RESOLVE_)
#undef TFC_CUDA_RESOLVE_
    return Status();
  };
  if (Status status = resolveAll(); !status.ok()) {
    dlclose(library);
    return status;
  }

  CUresult result = driver->cuInit(0);
  if (result != CUDA_SUCCESS) {
    std::string hint;
    if (result == CUDA_ERROR_NO_DEVICE) {
      hint = ": no NVIDIA GPU is visible to this process (see nvidia-smi, and "
             "CUDA_VISIBLE_DEVICES if it is set)";
    } else if (result == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) {
      hint = ": the driver library and the kernel module differ in version (reboot after a "
             "driver update, or reinstall the driver)";
    }
    return loadError(
        fmt::format("{}: cuInit(0) failed: {}{}", label, describe(*driver, result), hint));
  }
  result = driver->cuDriverGetVersion(&driver->version);
  if (result != CUDA_SUCCESS) {
    return loadError(fmt::format("{}: cuDriverGetVersion failed: {}", label,
                                 describe(*driver, result)));
  }
  if (driver->version < kMinDriverVersion) {
    return loadError(fmt::format(
        "{}: the NVIDIA driver supports CUDA {}.{}, tfc needs CUDA {}.{} or newer: update the "
        "NVIDIA driver",
        label, driver->version / 1000, driver->version % 1000 / 10, kMinDriverVersion / 1000,
        kMinDriverVersion % 1000 / 10));
  }
  return driver;
}

StatusOr<const Driver*> loadDriver() {
  return loadOnce<Driver>(kEnvironmentVariable, kDefaultLibrary, loadDriverFrom);
}

}  // namespace tfc::internal::cuda
