// A fake libnccl.so.2 for the emulated CUDA driver (emulator.cpp), so that the NCCL path of
// a CUDA artifact's collectives (runtime/src/devices/cuda/nccl.hpp, executor.cpp) runs on machines
// without a GPU. Test-only: point the runtime at it with
// TFC_NCCL_LIBRARY=<build>/test/cuda_emulator/nccl/libnccl.so.2 under mpirun.
//
// What it does, and how:
//  - Device memory is the emulator's, host memory; launches there run at once, so when a
//    collective is called the data of the kernels before it is in place. Every collective
//    runs at once over its communicator's MPI communicator, blocking; the stream is then
//    idle, as cuStreamQuery of the emulator says.
//  - ncclGetUniqueId returns random bytes. ncclCommInitRank is called by every rank of the
//    world at once (the runtime opens its communicators in the same order everywhere): it
//    splits MPI_COMM_WORLD by the id (the ranks that passed the same id are one
//    communicator, ordered by their NCCL rank), all-gathers every member's id and (nranks,
//    rank) and fails with ncclInvalidArgument, saying why on stderr, unless every member
//    passed the same id, nranks is the members' count and the ranks are 0 ... nranks - 1: so
//    a run that gets past it proves the runtime's bootstrap of the id (broadcast from the
//    group's rank 0) for the world and for each process group (--dp x --tp).
//  - ncclAvg is the sum times 1 / nranks, as the runtime's MPI plugin computes a mean.
//  - ncclCommDestroy prints "fake-nccl: rank R of N: C collectives" to stderr, so that a test
//    shows that the collectives took this path and not the host-staging one.
//  - TFC_FAKE_NCCL_VERSION (an ncclGetVersion code) overrides the version, 22809 (2.28.9).
//  - TFC_FAKE_NCCL_FAIL_RANK=R and TFC_FAKE_NCCL_FAIL_AT=K make rank R's K-th collective
//    (from 1) fail with ncclRemoteError, as a lost peer would, while the other ranks enter it
//    and wait: the runtime must then abort, not hang.
//  - TFC_FAKE_NCCL_STALL_RANK=R and TFC_FAKE_NCCL_STALL_AT=K make rank R's K-th collective
//    queue nothing and never finish: its stream stays busy (the emulator's test hook
//    tfc_emu_test_stall_stream, found in the driver that TFC_CUDA_DRIVER names) and
//    ncclCommGetAsyncError says ncclInProgress, as for a collective whose peer is gone; the
//    runtime must give up at TFC_COMM_TIMEOUT_S and abort the communicator.
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "devices/cuda/nccl.hpp"

using namespace tfc::internal::cuda;  // NOLINT: NCCL's types, as nccl.h's users see them

namespace tfc::internal::cuda {
struct ncclComm {
  int rank = 0;
  int size = 1;
  MPI_Comm mpi = MPI_COMM_NULL;  // the members, in NCCL rank order
  long collectives = 0;
  bool stalled = false;  // TFC_FAKE_NCCL_STALL_*: a collective that never finishes
};
}  // namespace tfc::internal::cuda

#define TFC_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

void complain(const char* format, const char* detail, int rank) {
  std::fprintf(stderr, "fake-nccl: rank %d: ", rank);
  std::fprintf(stderr, format, detail);
  std::fputc('\n', stderr);
}

int worldRank() {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

bool mpiReady() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// The checks every collective makes of its arguments; ncclSuccess or the error.
ncclResult_t checkCall(ncclComm_t comm, ncclDataType_t datatype, ncclDataType_t expected,
                       const void* recv, const char* what) {
  if (comm == nullptr || recv == nullptr || !mpiReady()) {
    complain("%s: a null communicator or buffer, or MPI is not running", what, worldRank());
    return ncclInvalidArgument;
  }
  if (datatype != expected) {
    complain("%s: unexpected data type", what, comm->rank);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// Whether this collective of |comm| is the one that TFC_FAKE_NCCL_<kind>_RANK and _AT name.
bool injectedHere(ncclComm_t comm, const char* kind) {
  const std::string prefix = std::string("TFC_FAKE_NCCL_") + kind;
  const char* rank = std::getenv((prefix + "_RANK").c_str());
  const char* at = std::getenv((prefix + "_AT").c_str());
  return rank != nullptr && at != nullptr && std::atoi(rank) == comm->rank &&
         std::atol(at) == comm->collectives + 1;
}

// Whether this collective of |comm| is the one TFC_FAKE_NCCL_FAIL_RANK/_AT ask to fail.
bool injectedFailure(ncclComm_t comm, const char* what) {
  if (!injectedHere(comm, "FAIL")) return false;
  std::fprintf(stderr, "fake-nccl: rank %d: %s: collective %ld fails (TFC_FAKE_NCCL_FAIL_AT)\n",
               comm->rank, what, comm->collectives + 1);
  return true;
}

// Whether this collective is the one TFC_FAKE_NCCL_STALL_RANK/_AT ask never to finish; if
// so, leaves |stream| busy for ever (the emulator's test hook) and |comm| in progress.
bool injectedStall(ncclComm_t comm, cudaStream_t stream, const char* what) {
  if (!injectedHere(comm, "STALL")) return false;
  const char* driver = std::getenv("TFC_CUDA_DRIVER");
  void* handle = driver != nullptr ? dlopen(driver, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  using Stall = int (*)(cudaStream_t);
  auto stall = handle != nullptr
                   ? reinterpret_cast<Stall>(dlsym(handle, "tfc_emu_test_stall_stream"))
                   : nullptr;
  if (stall == nullptr || stall(stream) != 0) {
    std::fprintf(stderr, "fake-nccl: rank %d: %s: cannot stall the stream (TFC_CUDA_DRIVER "
                 "must name the loaded emulator)\n", comm->rank, what);
    std::abort();
  }
  std::fprintf(stderr, "fake-nccl: rank %d: %s: collective %ld never finishes "
               "(TFC_FAKE_NCCL_STALL_AT)\n", comm->rank, what, comm->collectives + 1);
  comm->stalled = true;
  return true;
}

ncclResult_t mpiResult(int rc, const char* what, int rank) {
  if (rc == MPI_SUCCESS) return ncclSuccess;
  complain("%s failed in MPI", what, rank);
  return ncclSystemError;
}

void scaleForMean(ncclComm_t comm, ncclRedOp_t op, void* recv, size_t count) {
  if (op != ncclAvg) return;
  const float scale = 1.0f / static_cast<float>(comm->size);
  float* out = static_cast<float*>(recv);
  for (size_t i = 0; i < count; ++i) out[i] *= scale;
}

}  // namespace

TFC_FAKE_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  const char* forced = std::getenv("TFC_FAKE_NCCL_VERSION");
  *version = forced != nullptr && *forced != '\0' ? std::atoi(forced) : 22809;
  return ncclSuccess;
}

TFC_FAKE_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

TFC_FAKE_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return ncclInvalidArgument;
  std::random_device random;
  for (char& byte : uniqueId->internal) byte = static_cast<char>(random());
  return ncclSuccess;
}

TFC_FAKE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                              int rank) {
  if (comm == nullptr || !mpiReady()) {
    complain("%s: a null communicator, or MPI is not running", "ncclCommInitRank", rank);
    return ncclInvalidArgument;
  }
  const int me = worldRank();
  // The members: the ranks that passed the same id (a colour from its bytes), by NCCL rank.
  int colour = 0;
  std::memcpy(&colour, commId.internal, sizeof(colour));
  MPI_Comm members = MPI_COMM_NULL;
  if (MPI_Comm_split(MPI_COMM_WORLD, colour & 0x7fffffff, rank, &members) != MPI_SUCCESS) {
    complain("%s: MPI_Comm_split failed", "ncclCommInitRank", me);
    return ncclSystemError;
  }
  int size = 0;
  MPI_Comm_size(members, &size);
  // Every member's id and (nranks, rank), to check that all of them agree.
  std::vector<char> ids(kNcclUniqueIdBytes * static_cast<size_t>(size));
  int mine[2] = {nranks, rank};
  std::vector<int> ranks(2 * static_cast<size_t>(size));
  if (MPI_Allgather(commId.internal, kNcclUniqueIdBytes, MPI_CHAR, ids.data(),
                    kNcclUniqueIdBytes, MPI_CHAR, members) != MPI_SUCCESS ||
      MPI_Allgather(mine, 2, MPI_INT, ranks.data(), 2, MPI_INT, members) != MPI_SUCCESS) {
    complain("%s: MPI_Allgather failed", "ncclCommInitRank", me);
    MPI_Comm_free(&members);
    return ncclSystemError;
  }
  for (int r = 0; r < size; ++r) {
    bool sameId = std::memcmp(&ids[kNcclUniqueIdBytes * static_cast<size_t>(r)], ids.data(),
                              kNcclUniqueIdBytes) == 0;
    bool placed = ranks[2 * static_cast<size_t>(r)] == size &&
                  ranks[2 * static_cast<size_t>(r) + 1] == r;
    if (!sameId || !placed) {
      std::fprintf(stderr,
                   "fake-nccl: rank %d: ncclCommInitRank: member %d of %d passed %s (nranks "
                   "%d, rank %d)\n",
                   me, r, size, sameId ? "another rank or size" : "another unique id than "
                   "member 0 (the id was not shared)", ranks[2 * static_cast<size_t>(r)],
                   ranks[2 * static_cast<size_t>(r) + 1]);
      MPI_Comm_free(&members);
      return ncclInvalidArgument;
    }
  }
  *comm = new ncclComm{rank, nranks, members, 0};
  return ncclSuccess;
}

TFC_FAKE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  std::fprintf(stderr, "fake-nccl: rank %d of %d: %ld collectives\n", comm->rank, comm->size,
               comm->collectives);
  if (comm->mpi != MPI_COMM_NULL && mpiReady()) MPI_Comm_free(&comm->mpi);
  delete comm;
  return ncclSuccess;
}

TFC_FAKE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  std::fprintf(stderr, "fake-nccl: rank %d of %d: aborted after %ld collectives\n", comm->rank,
               comm->size, comm->collectives);
  delete comm;
  return ncclSuccess;
}

TFC_FAKE_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (comm == nullptr || asyncError == nullptr) return ncclInvalidArgument;
  // Every collective is done when its call returns, but a stalled one.
  *asyncError = comm->stalled ? ncclInProgress : ncclSuccess;
  return ncclSuccess;
}

namespace {

// What every collective shares: the argument checks, the injected failure or stall, then
// |exchange| (an MPI call, returning its code) and the count of collectives run.
template <class Exchange>
ncclResult_t collective(ncclComm_t comm, cudaStream_t stream, ncclDataType_t datatype,
                        ncclDataType_t expected, const void* recv, const char* what,
                        Exchange exchange) {
  if (ncclResult_t bad = checkCall(comm, datatype, expected, recv, what)) return bad;
  if (injectedFailure(comm, what)) return ncclRemoteError;
  if (injectedStall(comm, stream, what)) return ncclSuccess;
  if (ncclResult_t result = mpiResult(exchange(), what, comm->rank)) return result;
  ++comm->collectives;
  return ncclSuccess;
}

}  // namespace

TFC_FAKE_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                           ncclDataType_t datatype, ncclRedOp_t op,
                                           ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, stream, datatype, ncclFloat32, recvbuff, "ncclAllReduce", [&] {
    const void* in = sendbuff == recvbuff ? MPI_IN_PLACE : sendbuff;
    int rc = MPI_Allreduce(in, recvbuff, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                           comm->mpi);
    if (rc == MPI_SUCCESS) scaleForMean(comm, op, recvbuff, count);
    return rc;
  });
}

TFC_FAKE_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff,
                                               size_t recvcount, ncclDataType_t datatype,
                                               ncclRedOp_t op, ncclComm_t comm,
                                               cudaStream_t stream) {
  return collective(comm, stream, datatype, ncclFloat32, recvbuff, "ncclReduceScatter", [&] {
    int rc = MPI_Reduce_scatter_block(sendbuff, recvbuff, static_cast<int>(recvcount),
                                      MPI_FLOAT, MPI_SUM, comm->mpi);
    if (rc == MPI_SUCCESS) scaleForMean(comm, op, recvbuff, recvcount);
    return rc;
  });
}

TFC_FAKE_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff,
                                           size_t sendcount, ncclDataType_t datatype,
                                           ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, stream, datatype, ncclFloat32, recvbuff, "ncclAllGather", [&] {
    return MPI_Allgather(sendbuff, static_cast<int>(sendcount), MPI_FLOAT, recvbuff,
                         static_cast<int>(sendcount), MPI_FLOAT, comm->mpi);
  });
}

TFC_FAKE_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                           ncclDataType_t datatype, int root, ncclComm_t comm,
                                           cudaStream_t stream) {
  return collective(comm, stream, datatype, ncclUint8, recvbuff, "ncclBroadcast", [&] {
    if (comm->rank == root && sendbuff != recvbuff) std::memmove(recvbuff, sendbuff, count);
    return MPI_Bcast(recvbuff, static_cast<int>(count), MPI_BYTE, root, comm->mpi);
  });
}

// Every function of the runtime's list is exported here, with its signature.
#define TFC_FAKE_CHECK_EXPORT_(name, signature)                     \
  static_assert(std::is_same_v<decltype(&::name), DriverFunction<signature>>, \
                "the fake " #name " differs from runtime/src/devices/cuda/nccl.hpp's");
TFC_NCCL_FUNCTIONS(TFC_FAKE_CHECK_EXPORT_)
#undef TFC_FAKE_CHECK_EXPORT_
