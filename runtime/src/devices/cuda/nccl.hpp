// Internal: NCCL, loaded at run time with dlopen, for the collectives of CUDA artifacts.
//
// As with the CUDA driver (driver.hpp), the runtime has no link-time dependency on NCCL and
// builds without its headers: this header declares the few types, constants and functions it
// uses, with the values and signatures of nccl.h (NCCL 2.28; they have been stable since 2.10).
//
// Which library: libnccl.so.2, or the path in the environment variable TFC_NCCL_LIBRARY when
// it is set and not empty (tests point it at test/cuda_emulator's fake NCCL; unusual installs
// at a libnccl.so.2 outside the loader's search path).
//
// Thread-safety: loadNccl may be called from any thread; the Nccl it returns is immutable.
#ifndef TFC_RUNTIME_SRC_CUDA_NCCL_HPP_
#define TFC_RUNTIME_SRC_CUDA_NCCL_HPP_

#include <cstddef>
#include <memory>
#include <string>

#include "devices/cuda/driver.hpp"
#include "tfc/runtime/status.hpp"

namespace tfc::internal::cuda {

// ---- Types, as nccl.h declares them. ----
using ncclResult_t = int;  // enums in nccl.h; int-sized
using ncclDataType_t = int;
using ncclRedOp_t = int;
struct ncclComm;
using ncclComm_t = ncclComm*;
constexpr size_t kNcclUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
struct ncclUniqueId {
  char internal[kNcclUniqueIdBytes];
};
// cudaStream_t and CUstream are the same type (a CUstream_st*).
using cudaStream_t = CUstream;

// ---- Constants, copied from nccl.h. ----
constexpr ncclResult_t ncclSuccess = 0;
constexpr ncclResult_t ncclUnhandledCudaError = 1;
constexpr ncclResult_t ncclSystemError = 2;
constexpr ncclResult_t ncclInternalError = 3;
constexpr ncclResult_t ncclInvalidArgument = 4;
constexpr ncclResult_t ncclInvalidUsage = 5;
constexpr ncclResult_t ncclRemoteError = 6;
constexpr ncclResult_t ncclInProgress = 7;
constexpr ncclDataType_t ncclUint8 = 1;
constexpr ncclDataType_t ncclFloat32 = 7;
constexpr ncclRedOp_t ncclSum = 0;
constexpr ncclRedOp_t ncclAvg = 4;

// The NCCL that tfc needs at least, in ncclGetVersion's encoding (major * 10000 + minor * 100
// + patch since 2.9): 2.10 brought ncclAvg, the mean of tfc's all-reduces.
constexpr int kMinNcclVersion = 21000;

// ---- Functions. ----
// Every NCCL function the runtime uses: X(name, signature). The fake NCCL of
// test/cuda_emulator checks its exports against this list at compile time.
#define TFC_NCCL_FUNCTIONS(X)                                                                 \
  X(ncclGetVersion, ncclResult_t(int* version))                                               \
  X(ncclGetErrorString, const char*(ncclResult_t result))                                     \
  X(ncclGetUniqueId, ncclResult_t(ncclUniqueId * uniqueId))                                   \
  X(ncclCommInitRank, ncclResult_t(ncclComm_t * comm, int nranks, ncclUniqueId commId,        \
                                   int rank))                                                 \
  X(ncclCommDestroy, ncclResult_t(ncclComm_t comm))                                           \
  X(ncclCommAbort, ncclResult_t(ncclComm_t comm))                                             \
  X(ncclCommGetAsyncError, ncclResult_t(ncclComm_t comm, ncclResult_t * asyncError))          \
  X(ncclAllReduce, ncclResult_t(const void* sendbuff, void* recvbuff, size_t count,           \
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,     \
                                cudaStream_t stream))                                         \
  X(ncclReduceScatter, ncclResult_t(const void* sendbuff, void* recvbuff, size_t recvcount,   \
                                    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, \
                                    cudaStream_t stream))                                     \
  X(ncclAllGather, ncclResult_t(const void* sendbuff, void* recvbuff, size_t sendcount,       \
                                ncclDataType_t datatype, ncclComm_t comm,                     \
                                cudaStream_t stream))                                         \
  X(ncclBroadcast, ncclResult_t(const void* sendbuff, void* recvbuff, size_t count,           \
                                ncclDataType_t datatype, int root, ncclComm_t comm,           \
                                cudaStream_t stream))

// The loaded library: one pointer per function of TFC_NCCL_FUNCTIONS, all non-null. Never
// unloaded (communicators may outlive any one context).
struct Nccl {
#define TFC_NCCL_MEMBER_(name, signature) DriverFunction<signature> name = nullptr;
  TFC_NCCL_FUNCTIONS(TFC_NCCL_MEMBER_)
#undef TFC_NCCL_MEMBER_

  std::string path;         // as passed to dlopen
  void* library = nullptr;  // from dlopen
  int version = 0;          // ncclGetVersion's, e.g. 22809
};

// The process's NCCL: loaded and resolved on the first call, from $TFC_NCCL_LIBRARY or else
// libnccl.so.2; later calls return the same Nccl or the same error. Fails with
// TFC_FAILED_PRECONDITION when the library cannot be loaded, lacks a function, or is older
// than kMinNcclVersion; the message says which, and names the library.
StatusOr<const Nccl*> loadNccl();

// The work of loadNccl, uncached: loads |path| (as given to dlopen) and checks it. Each
// successful call leaves the library loaded. |fromEnvironment| only words the errors (whether
// the path came from TFC_NCCL_LIBRARY). For loadNccl and for tests.
StatusOr<std::unique_ptr<Nccl>> loadNcclFrom(const std::string& path,
                                             bool fromEnvironment = false);

// "2.28.9" for ncclGetVersion's 22809.
std::string ncclVersionText(int version);

// OK when |result| is ncclSuccess, else TFC_FAILED_PRECONDITION "<what>: <NCCL's text>".
Status checkNccl(const Nccl& nccl, ncclResult_t result, const std::string& what);

}  // namespace tfc::internal::cuda

#endif  // TFC_RUNTIME_SRC_CUDA_NCCL_HPP_
