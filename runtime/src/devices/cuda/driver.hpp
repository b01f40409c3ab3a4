// Internal: the CUDA driver API, loaded at run time with dlopen.
//
// The runtime has no link-time CUDA dependency and builds where the CUDA toolkit is absent,
// so this header declares the few driver types, constants and functions that a CUDA
// artifact needs itself instead of including cuda.h. The values and signatures are copied
// from cuda.h of CUDA 13 (they have been stable since CUDA 12); where a function's exported
// symbol carries a version suffix (cuda.h maps cuMemAlloc to cuMemAlloc_v2 with a macro),
// the list below names the exported symbol explicitly.
//
// Which library: libcuda.so.1 (the NVIDIA driver's), or the path in the environment
// variable TFC_CUDA_DRIVER when it is set and not empty. The variable is for tests (the
// emulated driver in test/cuda_emulator, which runs tfc's kernels on the host) and for
// unusual installs (a driver outside the loader's search path).
//
// Thread-safety: loadDriver may be called from any thread; the Driver it returns is
// immutable and its functions are the driver's, which are thread-safe.
#ifndef TFC_RUNTIME_SRC_CUDA_DRIVER_HPP_
#define TFC_RUNTIME_SRC_CUDA_DRIVER_HPP_

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include "tfc/runtime/status.hpp"

namespace tfc::internal::cuda {

// ---- Types, as cuda.h of CUDA 13 declares them. ----
using CUresult = int;  // an enum in cuda.h; int-sized
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUdevice_attribute = int;
using CUjit_option = int;
using CUstreamCaptureMode = int;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;
// A host function queued on a stream (cuLaunchHostFunc). The runtime does not queue any; the
// emulated driver and the fake cuBLASLt of test/cuda_emulator share the type from here.
using CUhostFn = void (*)(void* userData);

// ---- Constants, copied from cuda.h of CUDA 13. ----
// CUresult
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_DEINITIALIZED = 4;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
constexpr CUresult CUDA_ERROR_INVALID_HANDLE = 400;
constexpr CUresult CUDA_ERROR_ILLEGAL_STATE = 401;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;
constexpr CUresult CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701;
constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
constexpr CUresult CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908;
constexpr CUresult CUDA_ERROR_UNKNOWN = 999;
// CUdevice_attribute
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
// cuStreamCreate flags
constexpr unsigned int CU_STREAM_DEFAULT = 0x0;
constexpr unsigned int CU_STREAM_NON_BLOCKING = 0x1;
// cuEventCreate flags
constexpr unsigned int CU_EVENT_DEFAULT = 0x0;
constexpr unsigned int CU_EVENT_BLOCKING_SYNC = 0x1;
constexpr unsigned int CU_EVENT_DISABLE_TIMING = 0x2;
// CUstreamCaptureMode
constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_RELAXED = 2;
// cuGraphInstantiate flags
constexpr unsigned long long CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH = 1;

// The driver's version that tfc needs at least (cuDriverGetVersion's encoding: 1000 * major
// + 10 * minor).
constexpr int kMinDriverVersion = 12000;

// ---- Functions. ----
// Every driver function the runtime uses, once: X(member, exported symbol, signature).
// The member is the name cuda.h's users write; the exported symbol is what that name maps
// to in cuda.h 13 (without per-thread default streams). Driver below and the emulated
// driver in test/cuda_emulator (which checks its exports against this list at compile
// time) both expand it.
#define TFC_CUDA_DRIVER_FUNCTIONS(X)                                                           \
  X(cuInit, cuInit, CUresult(unsigned int flags))                                              \
  X(cuDriverGetVersion, cuDriverGetVersion, CUresult(int* driverVersion))                      \
  X(cuGetErrorName, cuGetErrorName, CUresult(CUresult error, const char** pStr))               \
  X(cuGetErrorString, cuGetErrorString, CUresult(CUresult error, const char** pStr))           \
  X(cuDeviceGetCount, cuDeviceGetCount, CUresult(int* count))                                  \
  X(cuDeviceGet, cuDeviceGet, CUresult(CUdevice* device, int ordinal))                         \
  X(cuDeviceGetName, cuDeviceGetName, CUresult(char* name, int len, CUdevice dev))             \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute,                                                \
    CUresult(int* pi, CUdevice_attribute attrib, CUdevice dev))                                \
  X(cuDeviceTotalMem, cuDeviceTotalMem_v2, CUresult(size_t* bytes, CUdevice dev))              \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain,                                        \
    CUresult(CUcontext* pctx, CUdevice dev))                                                   \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, CUresult(CUdevice dev))           \
  X(cuCtxSetCurrent, cuCtxSetCurrent, CUresult(CUcontext ctx))                                 \
  X(cuCtxSynchronize, cuCtxSynchronize, CUresult())                                            \
  X(cuModuleLoadData, cuModuleLoadData, CUresult(CUmodule* module, const void* image))         \
  X(cuModuleLoadDataEx, cuModuleLoadDataEx,                                                    \
    CUresult(CUmodule* module, const void* image, unsigned int numOptions,                     \
             CUjit_option* options, void** optionValues))                                      \
  X(cuModuleUnload, cuModuleUnload, CUresult(CUmodule hmod))                                   \
  X(cuModuleGetFunction, cuModuleGetFunction,                                                  \
    CUresult(CUfunction* hfunc, CUmodule hmod, const char* name))                              \
  X(cuModuleGetGlobal, cuModuleGetGlobal_v2,                                                   \
    CUresult(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name))               \
  X(cuMemAlloc, cuMemAlloc_v2, CUresult(CUdeviceptr* dptr, size_t bytesize))                   \
  X(cuMemFree, cuMemFree_v2, CUresult(CUdeviceptr dptr))                                       \
  X(cuMemGetInfo, cuMemGetInfo_v2, CUresult(size_t* free, size_t* total))                      \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2,                                                             \
    CUresult(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount))                    \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2,                                                             \
    CUresult(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount))                          \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2,                                                   \
    CUresult(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount, CUstream hStream))  \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2,                                                   \
    CUresult(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))        \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2,                                                   \
    CUresult(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,                   \
             CUstream hStream))                                                                \
  X(cuMemsetD8Async, cuMemsetD8Async,                                                          \
    CUresult(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream))             \
  X(cuLaunchKernel, cuLaunchKernel,                                                            \
    CUresult(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,                       \
             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,            \
             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,            \
             void** kernelParams, void** extra))                                               \
  X(cuStreamCreate, cuStreamCreate, CUresult(CUstream* phStream, unsigned int Flags))          \
  X(cuStreamDestroy, cuStreamDestroy_v2, CUresult(CUstream hStream))                           \
  X(cuStreamSynchronize, cuStreamSynchronize, CUresult(CUstream hStream))                      \
  X(cuStreamQuery, cuStreamQuery, CUresult(CUstream hStream))                                  \
  X(cuStreamBeginCapture, cuStreamBeginCapture_v2,                                             \
    CUresult(CUstream hStream, CUstreamCaptureMode mode))                                      \
  X(cuStreamEndCapture, cuStreamEndCapture, CUresult(CUstream hStream, CUgraph* phGraph))      \
  X(cuGraphInstantiate, cuGraphInstantiateWithFlags,                                           \
    CUresult(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags))              \
  X(cuGraphLaunch, cuGraphLaunch, CUresult(CUgraphExec hGraphExec, CUstream hStream))          \
  X(cuGraphExecDestroy, cuGraphExecDestroy, CUresult(CUgraphExec hGraphExec))                  \
  X(cuGraphDestroy, cuGraphDestroy, CUresult(CUgraph hGraph))                                  \
  X(cuEventCreate, cuEventCreate, CUresult(CUevent* phEvent, unsigned int Flags))              \
  X(cuEventRecord, cuEventRecord, CUresult(CUevent hEvent, CUstream hStream))                  \
  X(cuEventSynchronize, cuEventSynchronize, CUresult(CUevent hEvent))                          \
  X(cuEventElapsedTime, cuEventElapsedTime_v2,                                                 \
    CUresult(float* pMilliseconds, CUevent hStart, CUevent hEnd))                              \
  X(cuEventDestroy, cuEventDestroy_v2, CUresult(CUevent hEvent))

// dlsym(|library|, |symbol|), so that this header needs no <dlfcn.h>.
void* dlsymOf(void* library, const char* symbol);

// A pointer to a driver function of |Signature|.
template <typename Signature>
using DriverFunction = Signature*;

// The loaded driver: one pointer per function of TFC_CUDA_DRIVER_FUNCTIONS, all non-null.
// The library is never unloaded (a CUDA driver is not made to be unloaded and reloaded).
struct Driver {
#define TFC_CUDA_DRIVER_MEMBER_(member, symbol, signature) \
  DriverFunction<signature> member = nullptr;
  TFC_CUDA_DRIVER_FUNCTIONS(TFC_CUDA_DRIVER_MEMBER_)
#undef TFC_CUDA_DRIVER_MEMBER_

  std::string path;        // the library as passed to dlopen
  void* library = nullptr; // from dlopen
  int version = 0;         // cuDriverGetVersion's, e.g. 13000
};

// The process's driver: loaded, resolved and initialized (cuInit(0)) on the first call, from
// $TFC_CUDA_DRIVER or else libcuda.so.1; later calls return the same Driver, or the same
// error. Fails with TFC_FAILED_PRECONDITION when there is no usable driver: the library is
// not loadable, lacks a function, is older than CUDA 12, or cuInit fails (no GPU).
StatusOr<const Driver*> loadDriver();

// The work of loadDriver, uncached: loads |path| (as given to dlopen) and initializes it.
// Each successful call leaves the library loaded. |fromEnvironment| only words the errors
// (whether the path came from TFC_CUDA_DRIVER). For loadDriver and for tests.
StatusOr<std::unique_ptr<Driver>> loadDriverFrom(const std::string& path,
                                                 bool fromEnvironment = false);

// The process's one copy of a dlopen'ed library T (the driver, NCCL): the first call loads
// the path in the environment variable |variable| when it is set and not empty, else
// |defaultLibrary|, with |loadFrom| (which words its errors by whether the path came from
// the environment); every call returns that library, or that first error again. Never
// freed. One loader per T (the cache is per T).
template <class T>
StatusOr<const T*> loadOnce(const char* variable, const char* defaultLibrary,
                            StatusOr<std::unique_ptr<T>> (*loadFrom)(const std::string&, bool)) {
  // The error is kept as code and text, since a Status cannot be copied.
  struct Loaded {
    const T* library = nullptr;
    tfc_status_code_t code = TFC_OK;
    std::string message;
  };
  static const Loaded loaded = [&] {
    Loaded result;
    const char* value = std::getenv(variable);
    const bool fromEnvironment = value != nullptr && value[0] != '\0';
    auto library = loadFrom(fromEnvironment ? value : defaultLibrary, fromEnvironment);
    if (library.ok()) {
      result.library = std::move(library).value().release();
    } else {
      result.code = library.status().code();
      result.message = library.status().message();
    }
    return result;
  }();
  if (loaded.library == nullptr) return Status(loaded.code, loaded.message);
  return loaded.library;
}

// The shared work of the dlopen'ed libraries' loaders (the driver, NCCL, cuBLASLt):
// dlopen(|path|, RTLD_NOW | RTLD_LOCAL), or null with dlerror's reason in *reason.
void* openLibrary(const std::string& path, std::string* reason);
// Points |slot| at |symbol| of |library|; false when the library lacks it.
template <typename Slot>
bool resolveSymbol(void* library, const char* symbol, Slot& slot) {
  void* address = dlsymOf(library, symbol);
  if (address == nullptr) return false;
  slot = reinterpret_cast<Slot>(address);
  return true;
}

// OK when |result| is CUDA_SUCCESS, else an error "<what>: CUDA_ERROR_OUT_OF_MEMORY (out of
// memory)". Codes: TFC_OUT_OF_MEMORY for CUDA_ERROR_OUT_OF_MEMORY; TFC_INTERNAL for the
// results that mean tfc misused the API (invalid value, invalid handle) or a kernel
// addressed memory it should not (illegal address); TFC_FAILED_PRECONDITION otherwise.
Status check(const Driver& driver, CUresult result, const char* what);

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", or "CUDA error 1234" for a result that the
// driver cannot name.
std::string describe(const Driver& driver, CUresult result);

}  // namespace tfc::internal::cuda

#endif  // TFC_RUNTIME_SRC_CUDA_DRIVER_HPP_
