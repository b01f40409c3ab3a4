// A fake libcuda.so.1 that runs tfc's CUDA kernels on the host, so that the host half of a
// CUDA artifact (launches, copies, the device arena, parameter upload, graphs) is tested end
// to end on machines without a GPU. Test-only code: point the runtime at it with
// TFC_CUDA_DRIVER=<build>/test/cuda_emulator/libcuda.so.1 (or LD_LIBRARY_PATH).
//
// What it emulates, and how:
//  - One device, "tfc CUDA emulator"; its compute capability comes from
//    TFC_CUDA_EMULATOR_ARCH ("sm_90", the default, is 9.0), its memory size from
//    TFC_CUDA_EMULATOR_MEMORY_MB (default 16384). Driver version 13000.
//  - Device memory is host memory: a CUdeviceptr is the host address. New allocations are
//    filled with 0xFF bytes (NaN floats, -1 integers), so that code which reads memory it
//    never wrote fails visibly instead of seeing the zeros a fresh page would hold. Copies
//    and memsets check that their device side lies inside one allocation (or a module
//    global) and fail with CUDA_ERROR_INVALID_VALUE otherwise.
//  - Modules ignore their image (a cubin or PTX the host cannot run). The kernels come from
//    the host shared object named by TFC_CUDA_EMULATOR_KERNELS, which
//    build_host_kernels.py makes from tfc's dumped CUDA sources: kernel NAME is the
//    function tfc_emu_NAME (KernelFn below) with tfc_emu_nparams_NAME parameters; a global
//    NAME has its size in tfc_emu_sizeof_NAME. Every module of the process shares that one
//    object, and so its globals.
//  - Launches (3-D grids and blocks, up to 1024 threads, up to 48 KiB of dynamic shared
//    memory) run at once, synchronously, on the calling thread, through the host device
//    model (host_shim.h): a block's threads run cooperatively, so barriers, warp
//    collectives and tensor-core products work, and a kernel's fault (a shared-memory race,
//    an access out of bounds, a barrier in divergent code) is printed with the kernel's
//    name and fails the launch, or the graph launch that replays it, with
//    CUDA_ERROR_LAUNCH_FAILED.
//  - Host functions (cuLaunchHostFunc; the fake cuBLASLt queues its products so) run at
//    once too, on the calling thread and under the emulator's lock: as on a GPU, a host
//    function must not call the driver (here it would deadlock).
//  - Stream capture records launches (with the values of their parameters at capture
//    time), copies, memsets, host functions and event records on the capturing stream;
//    cuGraphLaunch replays them in order. As a real driver does, a call that is unsafe
//    during a capture in the global or thread-local mode (cuMemAlloc, cuMemFree, the
//    synchronous copies, cuStreamSynchronize of the capturing stream) fails and
//    invalidates the capture.
//  - A context must be current on the calling thread for what needs one (allocation,
//    copies, modules, streams, launches), so that a host thread that forgot
//    cuCtxSetCurrent fails here as it would on a GPU.
// Every entry point takes one process-wide lock; kernels and host functions run under it.
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "devices/cuda/driver.hpp"

using namespace tfc::internal::cuda;  // NOLINT: the driver's types, as cuda.h's users see them

namespace {

// Runs a launch of grid[3] blocks of block[3] threads with |shared| bytes of dynamic shared
// memory; params[i] points at parameter i. Returns 0, or non-zero with the fault's message
// in fault[0..fault_size).
using KernelFn = int (*)(const unsigned* grid, const unsigned* block, unsigned shared,
                         void** params, char* fault, unsigned long long fault_size);
using Clock = std::chrono::steady_clock;

void complain(const std::string& message) {
  std::fprintf(stderr, "tfc CUDA emulator: %s\n", message.c_str());
}

}  // namespace

// The handles' structs, in the namespace where driver.hpp declares them.
namespace tfc::internal::cuda {

struct CUctx_st {
  int refs = 0;  // primary-context retains; the context is usable while positive
};

struct CUfunc_st {
  std::string name;
  KernelFn kernel = nullptr;
  int numParams = 0;
};

struct CUmod_st {
  void* library = nullptr;
  std::map<std::string, std::unique_ptr<CUfunc_st>> functions;
};

struct CUevent_st {
  unsigned int flags = 0;
  bool recorded = false;
  Clock::time_point time;
};

// One recorded operation of a captured stream.
struct Op {
  enum class Kind { kLaunch, kCopy, kMemset, kRecord, kHostFunc };
  Kind kind = Kind::kLaunch;
  // kLaunch: the function, its shape and its parameters' values (8 bytes each).
  const CUfunc_st* function = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared = 0;
  std::vector<uint64_t> params;
  // kCopy / kMemset: the destination, the source or byte value, and the size.
  void* dst = nullptr;
  const void* src = nullptr;
  unsigned char value = 0;
  size_t bytes = 0;
  // kRecord
  CUevent_st* event = nullptr;
  // kHostFunc: the function and its argument, called as fn(userData) on each run.
  CUhostFn hostFn = nullptr;
  void* userData = nullptr;
};

struct CUstream_st {
  unsigned int flags = 0;
  bool capturing = false;
  bool invalidated = false;  // an unsafe call happened during the capture
  bool stalled = false;      // tfc_emu_test_stall_stream: never done again
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id captureThread;
  std::vector<Op> ops;
};

struct CUgraph_st {
  std::vector<Op> ops;
};

struct CUgraphExec_st {
  std::vector<Op> ops;
};

}  // namespace tfc::internal::cuda

namespace {

struct State {
  std::mutex mutex;
  bool initialized = false;
  int major = 9, minor = 0;
  size_t totalBytes = 0, allocatedBytes = 0;
  CUctx_st primary;
  CUstream_st legacyStream;  // the NULL stream; never captures
  std::map<uintptr_t, size_t> allocations;  // start -> size
  std::map<uintptr_t, size_t> globals;      // module globals handed out, start -> size
  std::set<const void*> modules, functions, streams, events, graphs, execs;
  void* kernels = nullptr;  // the object of TFC_CUDA_EMULATOR_KERNELS, once loaded
};

// Never destroyed: a process may call the driver from its static destructors.
State& state() {
  static State* instance = new State;
  return *instance;
}

thread_local CUcontext currentContext = nullptr;

#define TFC_EMU_LOCK() std::lock_guard<std::mutex> tfc_emu_lock_(state().mutex)
#define TFC_EMU_REQUIRE(condition, error) \
  do {                                    \
    if (!(condition)) return (error);     \
  } while (false)
#define TFC_EMU_TRY(expression)                                 \
  do {                                                          \
    CUresult tfc_emu_result_ = (expression);                    \
    if (tfc_emu_result_ != CUDA_SUCCESS) return tfc_emu_result_; \
  } while (false)

CUresult needInit() {
  return state().initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

// A handle's destroy call: removes it from |handles| (CUDA_ERROR_INVALID_HANDLE when it
// is not there) and deletes it. The caller holds the lock.
template <typename Handles, typename Handle>
CUresult destroyHandle(Handles& handles, Handle handle) {
  TFC_EMU_TRY(needInit());
  TFC_EMU_REQUIRE(handles.erase(handle) != 0, CUDA_ERROR_INVALID_HANDLE);
  delete handle;
  return CUDA_SUCCESS;
}

// cuInit, and a context current on this thread.
CUresult needContext() {
  TFC_EMU_TRY(needInit());
  return currentContext != nullptr && currentContext->refs > 0 ? CUDA_SUCCESS
                                                               : CUDA_ERROR_INVALID_CONTEXT;
}

// The stream of a handle: NULL and the CU_STREAM_LEGACY / CU_STREAM_PER_THREAD constants
// are the legacy stream, which never captures.
CUresult findStream(CUstream handle, CUstream_st** stream) {
  const auto value = reinterpret_cast<uintptr_t>(handle);
  if (value <= 2) {
    *stream = &state().legacyStream;
    return CUDA_SUCCESS;
  }
  TFC_EMU_REQUIRE(state().streams.count(handle) != 0, CUDA_ERROR_INVALID_HANDLE);
  *stream = handle;
  return CUDA_SUCCESS;
}

// For calls that a real driver refuses while a stream captures in the global mode, or in the
// thread-local mode on this thread: fails the call and invalidates those captures.
CUresult unsafeDuringCapture() {
  CUresult result = CUDA_SUCCESS;
  for (const void* handle : state().streams) {
    auto* stream = static_cast<CUstream_st*>(const_cast<void*>(handle));
    if (!stream->capturing) continue;
    if (stream->mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
        (stream->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
         stream->captureThread == std::this_thread::get_id())) {
      stream->invalidated = true;
      result = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  }
  return result;
}

// Whether [address, address + bytes) lies inside one allocation or one module global.
bool inDeviceMemory(uintptr_t address, size_t bytes) {
  for (const auto* ranges : {&state().allocations, &state().globals}) {
    auto next = ranges->upper_bound(address);
    if (next == ranges->begin()) continue;
    auto range = std::prev(next);
    const size_t offset = address - range->first;
    if (offset <= range->second && bytes <= range->second - offset) return true;
  }
  return false;
}

CUresult checkDevice(CUdeviceptr address, size_t bytes) {
  if (bytes == 0) return CUDA_SUCCESS;
  return inDeviceMemory(static_cast<uintptr_t>(address), bytes) ? CUDA_SUCCESS
                                                                : CUDA_ERROR_INVALID_VALUE;
}

CUresult runOp(const Op& op) {
  switch (op.kind) {
    case Op::Kind::kLaunch: {
      std::vector<void*> pointers(op.params.size());
      // Each kernelParams[i] points at the value of parameter i.
      auto values = op.params;
      for (size_t i = 0; i < values.size(); ++i) pointers[i] = &values[i];
      char fault[1024] = {};
      if (op.function->kernel(op.grid, op.block, op.shared, pointers.data(), fault,
                              sizeof fault) != 0) {
        complain(fault);
        return CUDA_ERROR_LAUNCH_FAILED;
      }
      break;
    }
    case Op::Kind::kCopy:
      if (op.bytes != 0) std::memmove(op.dst, op.src, op.bytes);
      break;
    case Op::Kind::kMemset:
      if (op.bytes != 0) std::memset(op.dst, op.value, op.bytes);
      break;
    case Op::Kind::kRecord:
      op.event->recorded = true;
      op.event->time = Clock::now();
      break;
    case Op::Kind::kHostFunc:
      op.hostFn(op.userData);
      break;
  }
  return CUDA_SUCCESS;
}

// Runs |op| on |stream| now, or records it when the stream captures.
CUresult submit(CUstream_st* stream, Op op) {
  if (stream->capturing) {
    stream->ops.push_back(std::move(op));
  } else {
    return runOp(op);
  }
  return CUDA_SUCCESS;
}

CUresult copyAsync(void* dst, const void* src, size_t bytes, CUstream handle) {
  CUstream_st* stream = nullptr;
  TFC_EMU_TRY(findStream(handle, &stream));
  Op op;
  op.kind = Op::Kind::kCopy;
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  return submit(stream, std::move(op));
}

// The emulated device's compute capability from TFC_CUDA_EMULATOR_ARCH: "sm_86" is 8.6,
// "sm_100" 10.0, "sm_90a" 9.0.
bool parseArch(const char* text, int* major, int* minor) {
  std::string arch = text;
  if (arch.rfind("sm_", 0) != 0) return false;
  std::string digits = arch.substr(3);
  while (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back()))) {
    digits.pop_back();
  }
  if (digits.size() < 2 || digits.size() > 3 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  *major = std::stoi(digits.substr(0, digits.size() - 1));
  *minor = digits.back() - '0';
  return true;
}

struct ErrorText {
  CUresult result;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* findError(CUresult result) {
  for (const ErrorText& error : kErrors) {
    if (error.result == result) return &error;
  }
  return nullptr;
}

}  // namespace

#define TFC_EMU_EXPORT extern "C" __attribute__((visibility("default")))

// ---- Initialization, errors, device. ----

TFC_EMU_EXPORT CUresult cuInit(unsigned int flags) {
  TFC_EMU_LOCK();
  TFC_EMU_REQUIRE(flags == 0, CUDA_ERROR_INVALID_VALUE);
  State& s = state();
  const char* arch = std::getenv("TFC_CUDA_EMULATOR_ARCH");
  if (arch != nullptr && arch[0] != '\0' && !parseArch(arch, &s.major, &s.minor)) {
    complain(std::string("TFC_CUDA_EMULATOR_ARCH=") + arch +
             " is not an architecture such as sm_90");
    return CUDA_ERROR_INVALID_DEVICE;
  }
  s.totalBytes = size_t{16384} << 20;
  if (const char* megabytes = std::getenv("TFC_CUDA_EMULATOR_MEMORY_MB")) {
    char* end = nullptr;
    unsigned long long value = std::strtoull(megabytes, &end, 10);
    if (end == megabytes || *end != '\0' || value == 0) {
      complain(std::string("TFC_CUDA_EMULATOR_MEMORY_MB=") + megabytes +
               " is not a positive number of MiB");
      return CUDA_ERROR_INVALID_VALUE;
    }
    s.totalBytes = static_cast<size_t>(value) << 20;
  }
  s.initialized = true;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuDriverGetVersion(int* driverVersion) {
  TFC_EMU_REQUIRE(driverVersion != nullptr, CUDA_ERROR_INVALID_VALUE);
  *driverVersion = 13000;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuGetErrorName(CUresult error, const char** pStr) {
  TFC_EMU_REQUIRE(pStr != nullptr, CUDA_ERROR_INVALID_VALUE);
  const ErrorText* text = findError(error);
  *pStr = text != nullptr ? text->name : nullptr;
  return text != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

TFC_EMU_EXPORT CUresult cuGetErrorString(CUresult error, const char** pStr) {
  TFC_EMU_REQUIRE(pStr != nullptr, CUDA_ERROR_INVALID_VALUE);
  const ErrorText* text = findError(error);
  *pStr = text != nullptr ? text->text : nullptr;
  return text != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

TFC_EMU_EXPORT CUresult cuDeviceGetCount(int* count) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needInit());
  TFC_EMU_REQUIRE(count != nullptr, CUDA_ERROR_INVALID_VALUE);
  *count = 1;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needInit());
  TFC_EMU_REQUIRE(device != nullptr, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_REQUIRE(ordinal == 0, CUDA_ERROR_INVALID_DEVICE);
  *device = 0;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needInit());
  TFC_EMU_REQUIRE(name != nullptr && len > 0, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_REQUIRE(dev == 0, CUDA_ERROR_INVALID_DEVICE);
  std::snprintf(name, static_cast<size_t>(len), "%s", "tfc CUDA emulator");
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needInit());
  TFC_EMU_REQUIRE(pi != nullptr, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_REQUIRE(dev == 0, CUDA_ERROR_INVALID_DEVICE);
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      *pi = 1024;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      *pi = 2147483647;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *pi = 49152;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *pi = 32;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *pi = 4;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *pi = state().major;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *pi = state().minor;
      return CUDA_SUCCESS;
    default:
      complain("cuDeviceGetAttribute: attribute " + std::to_string(attrib) +
               " is not emulated (add it to test/cuda_emulator/emulator.cpp)");
      return CUDA_ERROR_INVALID_VALUE;
  }
}

TFC_EMU_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needInit());
  TFC_EMU_REQUIRE(bytes != nullptr, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_REQUIRE(dev == 0, CUDA_ERROR_INVALID_DEVICE);
  *bytes = state().totalBytes;
  return CUDA_SUCCESS;
}

// ---- Contexts. ----

TFC_EMU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needInit());
  TFC_EMU_REQUIRE(pctx != nullptr, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_REQUIRE(dev == 0, CUDA_ERROR_INVALID_DEVICE);
  ++state().primary.refs;
  *pctx = &state().primary;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needInit());
  TFC_EMU_REQUIRE(dev == 0, CUDA_ERROR_INVALID_DEVICE);
  TFC_EMU_REQUIRE(state().primary.refs > 0, CUDA_ERROR_INVALID_CONTEXT);
  --state().primary.refs;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needInit());
  TFC_EMU_REQUIRE(ctx == nullptr || ctx == &state().primary, CUDA_ERROR_INVALID_CONTEXT);
  currentContext = ctx;
  return CUDA_SUCCESS;
}

// Not in the runtime's list; trivial, for tests and tools.
TFC_EMU_EXPORT CUresult cuCtxGetCurrent(CUcontext* pctx) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needInit());
  TFC_EMU_REQUIRE(pctx != nullptr, CUDA_ERROR_INVALID_VALUE);
  *pctx = currentContext;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuCtxSynchronize() {
  TFC_EMU_LOCK();
  return needContext();  // everything ran already
}

// ---- Modules. ----

namespace {

CUresult loadModule(CUmodule* module, const void* image) {
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(module != nullptr && image != nullptr, CUDA_ERROR_INVALID_VALUE);
  const char* path = std::getenv("TFC_CUDA_EMULATOR_KERNELS");
  if (path == nullptr || path[0] == '\0') {
    complain("cuModuleLoadData: TFC_CUDA_EMULATOR_KERNELS is not set; set it to the host "
             "kernel object that test/cuda_emulator/build_host_kernels.py builds from "
             "tfc --target=cuda --dump-ir=DIR");
    return CUDA_ERROR_INVALID_IMAGE;
  }
  dlerror();
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    complain(std::string("cuModuleLoadData: cannot load TFC_CUDA_EMULATOR_KERNELS=") + path +
             ": " + (reason != nullptr ? reason : "unknown dlopen error"));
    return CUDA_ERROR_INVALID_IMAGE;
  }
  auto* loaded = new CUmod_st;
  loaded->library = library;
  state().modules.insert(loaded);
  *module = loaded;
  return CUDA_SUCCESS;
}

}  // namespace

TFC_EMU_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  TFC_EMU_LOCK();
  return loadModule(module, image);
}

TFC_EMU_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image,
                                           unsigned int numOptions, CUjit_option* options,
                                           void** optionValues) {
  TFC_EMU_LOCK();
  TFC_EMU_REQUIRE(numOptions == 0 || (options != nullptr && optionValues != nullptr),
                  CUDA_ERROR_INVALID_VALUE);
  return loadModule(module, image);
}

TFC_EMU_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needInit());
  TFC_EMU_REQUIRE(state().modules.erase(hmod) != 0, CUDA_ERROR_INVALID_HANDLE);
  for (auto& [name, function] : hmod->functions) state().functions.erase(function.get());
  dlclose(hmod->library);
  delete hmod;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(hfunc != nullptr && name != nullptr, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_REQUIRE(state().modules.count(hmod) != 0, CUDA_ERROR_INVALID_HANDLE);
  auto found = hmod->functions.find(name);
  if (found == hmod->functions.end()) {
    const std::string symbol = std::string("tfc_emu_") + name;
    auto kernel = reinterpret_cast<KernelFn>(dlsym(hmod->library, symbol.c_str()));
    auto count = static_cast<const int*>(
        dlsym(hmod->library, (std::string("tfc_emu_nparams_") + name).c_str()));
    if (kernel == nullptr || count == nullptr) return CUDA_ERROR_NOT_FOUND;
    auto function = std::make_unique<CUfunc_st>();
    function->name = name;
    function->kernel = kernel;
    function->numParams = *count;
    state().functions.insert(function.get());
    found = hmod->functions.emplace(name, std::move(function)).first;
  }
  *hfunc = found->second.get();
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod,
                                             const char* name) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(name != nullptr, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_REQUIRE(state().modules.count(hmod) != 0, CUDA_ERROR_INVALID_HANDLE);
  void* address = dlsym(hmod->library, name);
  auto size = static_cast<const unsigned long long*>(
      dlsym(hmod->library, (std::string("tfc_emu_sizeof_") + name).c_str()));
  if (address == nullptr || size == nullptr) return CUDA_ERROR_NOT_FOUND;
  state().globals[reinterpret_cast<uintptr_t>(address)] = static_cast<size_t>(*size);
  if (dptr != nullptr) *dptr = reinterpret_cast<CUdeviceptr>(address);
  if (bytes != nullptr) *bytes = static_cast<size_t>(*size);
  return CUDA_SUCCESS;
}

// ---- Memory. ----

TFC_EMU_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(dptr != nullptr && bytesize != 0, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_TRY(unsafeDuringCapture());
  State& s = state();
  if (bytesize > s.totalBytes - s.allocatedBytes) return CUDA_ERROR_OUT_OF_MEMORY;
  const size_t rounded = (bytesize + 255) / 256 * 256;
  void* memory = std::aligned_alloc(256, rounded);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(memory, 0xFF, rounded);
  s.allocations[reinterpret_cast<uintptr_t>(memory)] = bytesize;
  s.allocatedBytes += bytesize;
  *dptr = reinterpret_cast<CUdeviceptr>(memory);
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  if (dptr == 0) return CUDA_SUCCESS;  // as the real driver: free(NULL)
  TFC_EMU_TRY(unsafeDuringCapture());
  State& s = state();
  auto found = s.allocations.find(static_cast<uintptr_t>(dptr));
  TFC_EMU_REQUIRE(found != s.allocations.end(), CUDA_ERROR_INVALID_VALUE);
  s.allocatedBytes -= found->second;
  s.allocations.erase(found);
  std::free(reinterpret_cast<void*>(dptr));
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(free != nullptr && total != nullptr, CUDA_ERROR_INVALID_VALUE);
  *total = state().totalBytes;
  *free = state().totalBytes - state().allocatedBytes;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost,
                                        size_t ByteCount) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(srcHost != nullptr || ByteCount == 0, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_TRY(checkDevice(dstDevice, ByteCount));
  TFC_EMU_TRY(unsafeDuringCapture());
  if (ByteCount != 0) std::memcpy(reinterpret_cast<void*>(dstDevice), srcHost, ByteCount);
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(dstHost != nullptr || ByteCount == 0, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_TRY(checkDevice(srcDevice, ByteCount));
  TFC_EMU_TRY(unsafeDuringCapture());
  if (ByteCount != 0) std::memcpy(dstHost, reinterpret_cast<const void*>(srcDevice), ByteCount);
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost,
                                             size_t ByteCount, CUstream hStream) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(srcHost != nullptr || ByteCount == 0, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_TRY(checkDevice(dstDevice, ByteCount));
  return copyAsync(reinterpret_cast<void*>(dstDevice), srcHost, ByteCount, hStream);
}

TFC_EMU_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice,
                                             size_t ByteCount, CUstream hStream) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(dstHost != nullptr || ByteCount == 0, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_TRY(checkDevice(srcDevice, ByteCount));
  return copyAsync(dstHost, reinterpret_cast<const void*>(srcDevice), ByteCount, hStream);
}

TFC_EMU_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                             size_t ByteCount, CUstream hStream) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_TRY(checkDevice(dstDevice, ByteCount));
  TFC_EMU_TRY(checkDevice(srcDevice, ByteCount));
  return copyAsync(reinterpret_cast<void*>(dstDevice), reinterpret_cast<const void*>(srcDevice),
                   ByteCount, hStream);
}

TFC_EMU_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                        CUstream hStream) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_TRY(checkDevice(dstDevice, N));
  CUstream_st* stream = nullptr;
  TFC_EMU_TRY(findStream(hStream, &stream));
  Op op;
  op.kind = Op::Kind::kMemset;
  op.dst = reinterpret_cast<void*>(dstDevice);
  op.value = uc;
  op.bytes = N;
  return submit(stream, std::move(op));
}

// ---- Launches. ----

TFC_EMU_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                       unsigned int gridDimZ, unsigned int blockDimX,
                                       unsigned int blockDimY, unsigned int blockDimZ,
                                       unsigned int sharedMemBytes, CUstream hStream,
                                       void** kernelParams, void** extra) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(state().functions.count(f) != 0, CUDA_ERROR_INVALID_HANDLE);
  // A GPU's limits: 1024 threads a block (z at most 64), 48 KiB of dynamic shared memory
  // without the opt-in attribute.
  const unsigned long long threads = 1ull * blockDimX * blockDimY * blockDimZ;
  TFC_EMU_REQUIRE(gridDimX != 0 && gridDimY != 0 && gridDimZ != 0 && gridDimY <= 65535 &&
                      gridDimZ <= 65535 && threads != 0 && threads <= 1024 && blockDimZ <= 64,
                  CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_REQUIRE(sharedMemBytes <= 49152, CUDA_ERROR_INVALID_VALUE);
  if (extra != nullptr) {
    complain("cuLaunchKernel " + f->name + ": `extra` is not emulated; pass kernelParams");
    return CUDA_ERROR_INVALID_VALUE;
  }
  TFC_EMU_REQUIRE(f->numParams == 0 || kernelParams != nullptr, CUDA_ERROR_INVALID_VALUE);
  CUstream_st* stream = nullptr;
  TFC_EMU_TRY(findStream(hStream, &stream));
  Op op;
  op.kind = Op::Kind::kLaunch;
  op.function = f;
  op.grid[0] = gridDimX;
  op.grid[1] = gridDimY;
  op.grid[2] = gridDimZ;
  op.block[0] = blockDimX;
  op.block[1] = blockDimY;
  op.block[2] = blockDimZ;
  op.shared = sharedMemBytes;
  // The values now, as a real launch (and a captured one) copies them.
  op.params.resize(static_cast<size_t>(f->numParams));
  for (int i = 0; i < f->numParams; ++i) {
    TFC_EMU_REQUIRE(kernelParams[i] != nullptr, CUDA_ERROR_INVALID_VALUE);
    std::memcpy(&op.params[static_cast<size_t>(i)], kernelParams[i], sizeof(uint64_t));
  }
  return submit(stream, std::move(op));
}

// Not in the runtime's list (driver.hpp): the fake cuBLASLt queues its products with it, so
// that they run in stream order and are captured into graphs as a real cuBLASLt's kernels are.
TFC_EMU_EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(fn != nullptr, CUDA_ERROR_INVALID_VALUE);
  CUstream_st* stream = nullptr;
  TFC_EMU_TRY(findStream(hStream, &stream));
  Op op;
  op.kind = Op::Kind::kHostFunc;
  op.hostFn = fn;
  op.userData = userData;
  return submit(stream, std::move(op));
}

// ---- Streams and graphs. ----

TFC_EMU_EXPORT CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(phStream != nullptr, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_REQUIRE(Flags == CU_STREAM_DEFAULT || Flags == CU_STREAM_NON_BLOCKING,
                  CUDA_ERROR_INVALID_VALUE);
  auto* stream = new CUstream_st;
  stream->flags = Flags;
  state().streams.insert(stream);
  *phStream = stream;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
  TFC_EMU_LOCK();
  return destroyHandle(state().streams, hStream);
}

// The stream of a call that waits for it, which a capture forbids (and the capture is then
// invalidated, as a real driver does).
static CUresult waitableStream(CUstream hStream, CUstream_st** stream) {
  TFC_EMU_TRY(needContext());
  TFC_EMU_TRY(findStream(hStream, stream));
  if ((*stream)->capturing) {
    (*stream)->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuStreamSynchronize(CUstream hStream) {
  TFC_EMU_LOCK();
  CUstream_st* stream = nullptr;
  TFC_EMU_TRY(waitableStream(hStream, &stream));
  // A stalled stream's work never finishes; a real synchronize would block for ever, which
  // no test wants: it returns, and only cuStreamQuery reports the stall.
  return CUDA_SUCCESS;
}

// Launches and copies run at once, so a stream has never work left to do (but a stalled one).
TFC_EMU_EXPORT CUresult cuStreamQuery(CUstream hStream) {
  TFC_EMU_LOCK();
  CUstream_st* stream = nullptr;
  TFC_EMU_TRY(waitableStream(hStream, &stream));
  return stream->stalled ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

// Test-only, for the fake NCCL (fake_nccl.cpp): makes |hStream| report work that never
// finishes (cuStreamQuery: CUDA_ERROR_NOT_READY from now on), as a GPU's stream does whose
// collective waits for a peer that is gone, so that the runtime's deadline is exercised.
TFC_EMU_EXPORT CUresult tfc_emu_test_stall_stream(CUstream hStream) {
  TFC_EMU_LOCK();
  CUstream_st* stream = nullptr;
  TFC_EMU_TRY(findStream(hStream, &stream));
  stream->stalled = true;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
                      mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
                      mode == CU_STREAM_CAPTURE_MODE_RELAXED,
                  CUDA_ERROR_INVALID_VALUE);
  CUstream_st* stream = nullptr;
  TFC_EMU_TRY(findStream(hStream, &stream));
  TFC_EMU_REQUIRE(stream != &state().legacyStream, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  TFC_EMU_REQUIRE(!stream->capturing, CUDA_ERROR_ILLEGAL_STATE);
  stream->capturing = true;
  stream->invalidated = false;
  stream->mode = mode;
  stream->captureThread = std::this_thread::get_id();
  stream->ops.clear();
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(phGraph != nullptr, CUDA_ERROR_INVALID_VALUE);
  CUstream_st* stream = nullptr;
  TFC_EMU_TRY(findStream(hStream, &stream));
  TFC_EMU_REQUIRE(stream->capturing, CUDA_ERROR_ILLEGAL_STATE);
  if (stream->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
      stream->captureThread != std::this_thread::get_id()) {
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  stream->capturing = false;
  std::vector<Op> ops = std::move(stream->ops);
  stream->ops.clear();
  if (stream->invalidated) {
    *phGraph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  auto* graph = new CUgraph_st;
  graph->ops = std::move(ops);
  state().graphs.insert(graph);
  *phGraph = graph;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                    unsigned long long flags) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(phGraphExec != nullptr, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_REQUIRE(state().graphs.count(hGraph) != 0, CUDA_ERROR_INVALID_HANDLE);
  (void)flags;  // no graph allocations to free
  auto* exec = new CUgraphExec_st;
  exec->ops = hGraph->ops;
  state().execs.insert(exec);
  *phGraphExec = exec;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(state().execs.count(hGraphExec) != 0, CUDA_ERROR_INVALID_HANDLE);
  CUstream_st* stream = nullptr;
  TFC_EMU_TRY(findStream(hStream, &stream));
  for (const Op& op : hGraphExec->ops) TFC_EMU_TRY(submit(stream, op));
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  TFC_EMU_LOCK();
  return destroyHandle(state().execs, hGraphExec);
}

TFC_EMU_EXPORT CUresult cuGraphDestroy(CUgraph hGraph) {
  TFC_EMU_LOCK();
  return destroyHandle(state().graphs, hGraph);
}

// ---- Events. ----

TFC_EMU_EXPORT CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(phEvent != nullptr, CUDA_ERROR_INVALID_VALUE);
  auto* event = new CUevent_st;
  event->flags = Flags;
  state().events.insert(event);
  *phEvent = event;
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(state().events.count(hEvent) != 0, CUDA_ERROR_INVALID_HANDLE);
  CUstream_st* stream = nullptr;
  TFC_EMU_TRY(findStream(hStream, &stream));
  Op op;
  op.kind = Op::Kind::kRecord;
  op.event = hEvent;
  return submit(stream, std::move(op));
}

TFC_EMU_EXPORT CUresult cuEventSynchronize(CUevent hEvent) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(state().events.count(hEvent) != 0, CUDA_ERROR_INVALID_HANDLE);
  return CUDA_SUCCESS;
}

TFC_EMU_EXPORT CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart,
                                              CUevent hEnd) {
  TFC_EMU_LOCK();
  TFC_EMU_TRY(needContext());
  TFC_EMU_REQUIRE(pMilliseconds != nullptr, CUDA_ERROR_INVALID_VALUE);
  TFC_EMU_REQUIRE(state().events.count(hStart) != 0 && state().events.count(hEnd) != 0,
                  CUDA_ERROR_INVALID_HANDLE);
  TFC_EMU_REQUIRE(hStart->recorded && hEnd->recorded, CUDA_ERROR_INVALID_HANDLE);
  TFC_EMU_REQUIRE(((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING) == 0,
                  CUDA_ERROR_INVALID_HANDLE);
  *pMilliseconds = std::chrono::duration<float, std::milli>(hEnd->time - hStart->time).count();
  return CUDA_SUCCESS;
}

// The name before CUDA 12.8; the same here.
TFC_EMU_EXPORT CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

TFC_EMU_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
  TFC_EMU_LOCK();
  return destroyHandle(state().events, hEvent);
}

// Every function of the runtime's list is exported here, under its exported name and with
// its signature.
#define TFC_EMU_CHECK_EXPORT_(member, symbol, signature)                         \
  static_assert(std::is_same_v<decltype(&::symbol), DriverFunction<signature>>, \
                "the emulated " #symbol " differs from runtime/src/devices/cuda/driver.hpp's");
TFC_CUDA_DRIVER_FUNCTIONS(TFC_EMU_CHECK_EXPORT_)
#undef TFC_EMU_CHECK_EXPORT_
static_assert(std::is_same_v<decltype(&::cuLaunchHostFunc),
                             CUresult (*)(CUstream, CUhostFn, void*)>,
              "the emulated cuLaunchHostFunc differs from cuda.h's");
