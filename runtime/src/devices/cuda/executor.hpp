// Internal: the device of a context on a CUDA artifact (a tfc::internal::Device).
//
// One Executor per tfc_context_t. It holds a GPU's primary context, one stream, the
// artifact's kernel module, and device copies of everything an entry touches: parameters,
// state, one arena per entry and staging buffers for each entry's inputs and outputs.
// The host buffers of the context (the params object's and the state's) stay the copies
// the API hands out; the executor uploads them before the first call and after the host
// changed them (markHostChanged), and downloads them when the host reads them after calls
// (downloadIfStale), keeping track of which side is newer for each of the two.
//
// A call copies the inputs in, runs the entry's host code (which asks for launches,
// device copies and constants through tfc_host_api_t.device_*), copies the outputs out,
// reads and clears the module's error word, and synchronizes the stream. From an entry's
// second call on the same buffers, its launches are captured once as a CUDA graph and
// replayed (the entry's shapes are fixed, and so are its buffers' addresses: always for
// host inputs and outputs, which go through staging buffers), which removes the
// per-launch cost of the host code and the driver.
#ifndef TFC_RUNTIME_SRC_CUDA_EXECUTOR_HPP_
#define TFC_RUNTIME_SRC_CUDA_EXECUTOR_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "devices/device.hpp"
#include "tfc/artifact_abi.h"
#include "tfc/runtime/communicator.hpp"
#include "tfc/runtime/runtime.h"
#include "tfc/runtime/status.hpp"

namespace tfc::internal::cuda {

struct Nccl;

class Executor final : public Device {
 public:
  // Opens GPU |ordinal| (-1: the node-local rank modulo the GPUs' count, see
  // tfc_context_options_t.device) for the CUDA artifact |table| loaded from |path| (for messages):
  // loads the driver, checks the architecture, loads the module, creates the stream and
  // the device buffers of parameters and state (of those |paramHeld| and |stateHeld| say
  // this process holds; the others, another pipeline stage's, get none). |host| is the
  // context's host API, whose device_* callbacks the caller points at this executor.
  static StatusOr<std::unique_ptr<Executor>> create(const std::string& path,
                                                    const tfc_artifact_t& table,
                                                    int32_t ordinal,
                                                    const std::vector<bool>& paramHeld,
                                                    const std::vector<bool>& stateHeld);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // "GPU 0: NVIDIA H200 (sm_90)".
  const std::string& description() const;

  // Device: "GPU 0: NVIDIA H200 (sm_90); products on cuBLASLt 13.1.0"; device memory only;
  // one host thread (the host code only queues launches); its arenas are device memory.
  std::string name() const override;
  bool usesHostMemory() const override { return false; }
  int32_t hostThreads(int32_t) const override { return 1; }
  uint64_t deviceMemoryBytes() const override { return deviceBytes(); }
  uint64_t hostArenaBytes() const override { return 0; }
  // Runs the entry on the device: the host's parameters and state are uploaded first when the
  // host changed them; host inputs and outputs go through staging buffers, device ones
  // (|deviceIO|) are read and written in place. With |kernelSeconds| (profiling), the call
  // runs eagerly and adds each launch's GPU time, measured between events on the stream, to
  // the launch's slot.
  Status call(const Call& call) override;
  // Upload the host's copies before the next call (and never download the device's older
  // copies over them).
  void markHostChanged(bool params, bool state) override;
  // Copies the device's parameters and state into the host buffers when a call may have
  // changed them since the last download.
  Status download(const std::vector<void*>& params, const std::vector<void*>& state) override;
  // Gradient buckets run on the communicator's thread over host memory: not on a GPU.
  bool takesGradientBuckets() const override { return false; }

  // tfc_host_api_t.device_* (user = the context, which forwards here).
  void launch(int32_t kernel, const tfc_device_launch_t& shape, void* const* args,
              int32_t numArgs);
  void copy(void* dst, const void* src, uint64_t bytes);
  // tfc_host_api_t.device_matmul: 0 when cuBLASLt took the product (products.hpp), non-zero
  // when the artifact's own kernel must run it.
  int32_t matmul(const tfc_device_matmul_t& product, const void* a, const void* b, void* c,
                 const void* bias);
  // What runs the products: "cuBLASLt 13.1.0", or why the artifact's kernels do.
  const std::string& productsSummary() const;
  // The device memory this executor holds: parameters, state, each entry's arena and staging
  // buffers (allocated at its first call), constants and cuBLASLt's workspace. Only grows.
  uint64_t deviceBytes() const;
  void* constant(const void* data, uint64_t bytes);
  // tfc_host_api_t.collective on this GPU's buffers: copies |sendBytes| of |send| to the
  // host, lets |exchange| (the communicator) write the result from that copy into a host
  // buffer, and queues the copy of its |recvBytes| into |recv| before the next kernels.
  // Staged through the host, so it works over any communicator (MPI); deviceCollective
  // keeps the data on the GPU. An entry with a collective is never captured as a graph.
  Status throughHost(const void* send, size_t sendBytes, void* recv, size_t recvBytes,
                     const std::function<Status(const void*, void*)>& exchange) override;

  // Creates this GPU's NCCL communicator of process group |group| ("": the world) over the
  // ranks of |over| (every rank of the world calls it, in the same order as its other
  // collectives, once per group): |over|'s rank 0's unique id goes to the others by |over|'s
  // broadcast. From then on deviceCollective runs that group's collectives on this GPU's
  // stream. Succeeds or fails on every rank of |over| alike (they agree over it), so that all
  // of them may fall back on the host path together; |world| is told to abort the job at exit
  // when a collective fails.
  Status openNccl(const Nccl& nccl, Communicator& over, Communicator& world,
                  const std::string& group);
  // Whether openNccl succeeded (true also after the communicator failed since).
  bool hasDeviceCollectives() const override;
  // One collective of artifact_abi.h (all-reduce, reduce-scatter, all-gather, broadcast from
  // rank 0) over NCCL on this GPU's buffers, after the kernels queued before it; |reduce| is
  // TFC_REDUCE_*, over the communicator of |group| (the world's when it is the only one).
  // Waits until it is done, at most TFC_COMM_TIMEOUT_S seconds: then (or when NCCL reports
  // an error) every NCCL communicator is aborted, the world told to abort the job at exit,
  // and the error names the collective, |what| and the ranks. Other kinds: an error.
  Status deviceCollective(int32_t kind, int32_t reduce, const void* send, void* recv,
                          uint64_t count, const std::string& group,
                          const std::string& what) override;

 private:
  struct Impl;
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tfc::internal::cuda

#endif  // TFC_RUNTIME_SRC_CUDA_EXECUTOR_HPP_
