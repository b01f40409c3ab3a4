// Internal: where a context's compiled code runs. A context holds exactly one device: the
// host for a CPU artifact (core/host_device.cpp), a GPU for a CUDA artifact
// (devices/cuda/executor.hpp), so that the context asks its device rather than whether it has
// one. IREE's HAL device is the model, reduced to what tfc's artifacts need: calls, the host
// copies of parameters and state, and the buffers of collectives.
#ifndef TFC_RUNTIME_SRC_DEVICES_DEVICE_HPP_
#define TFC_RUNTIME_SRC_DEVICES_DEVICE_HPP_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tfc/artifact_abi.h"
#include "tfc/runtime/runtime.h"
#include "tfc/runtime/status.hpp"

namespace tfc::internal {

class Device {
 public:
  virtual ~Device() = default;

  // What tfc_context_device_name says: "cpu", or the GPU and what runs its products.
  virtual std::string name() const = 0;
  // Whether the compiled code reads and writes host memory: the caller's buffers, the
  // parameters and the state are used in place (never copied), so they must not overlap.
  virtual bool usesHostMemory() const = 0;
  // The threads a context's pool should have, given the caller's request (0: all cores).
  virtual int32_t hostThreads(int32_t requested) const = 0;
  // Device memory held for the model (tfc_context_device_bytes; 0 on the host).
  virtual uint64_t deviceMemoryBytes() const = 0;
  // Host memory of the entries' arenas allocated so far (tfc_context_arena_bytes_allocated;
  // 0 on a GPU, whose arenas are device memory).
  virtual uint64_t hostArenaBytes() const = 0;

  // Runs entry |index| of the artifact. |params| and |state| are the host's buffers (a GPU
  // uploads them first when the host changed them); inputs and outputs are checked against
  // the entry's descriptions, host buffers or, with |deviceIO|, this device's own. With
  // |kernelSeconds| (profiling), a device that times its launches itself adds each one's
  // time to its slot (the host's are timed through tfc_host_api_t's kernel callbacks).
  struct Call {
    int32_t index = 0;
    const tfc_host_api_t* host = nullptr;
    const std::vector<void*>* params = nullptr;
    const std::vector<void*>* state = nullptr;
    const tfc_tensor_ref_t* inputs = nullptr;
    size_t numInputs = 0;
    const tfc_tensor_ref_t* outputs = nullptr;
    size_t numOutputs = 0;
    bool deviceIO = false;
    std::vector<double>* kernelSeconds = nullptr;
  };
  virtual Status call(const Call& call) = 0;

  // The host's parameters and/or state changed: a device with copies of its own uploads
  // them before the next call.
  virtual void markHostChanged(bool params, bool state) = 0;
  // Makes the host's parameters and state current (a device with copies downloads those a
  // call may have changed).
  virtual Status download(const std::vector<void*>& params, const std::vector<void*>& state) = 0;

  // A collective's or a pipeline message's buffers on this device, given to |exchange| (the
  // communicator) as host memory: the host passes them as they are; a GPU stages them
  // through host copies, |sendBytes| of |send| and |recvBytes| into |recv|.
  virtual Status throughHost(const void* send, size_t sendBytes, void* recv, size_t recvBytes,
                             const std::function<Status(const void*, void*)>& exchange) = 0;
  // Whether collectives run on the device itself (NCCL, once set up), through
  // deviceCollective instead of throughHost.
  virtual bool hasDeviceCollectives() const { return false; }
  // One collective of artifact_abi.h on the device's buffers over its own communicator of
  // |group|; |what| names it in errors.
  virtual Status deviceCollective(int32_t kind, int32_t reduce, const void* send, void* recv,
                                  uint64_t count, const std::string& group,
                                  const std::string& what);
  // Whether a gradient bucket (tfc.all_reduce_start / _wait, run by the communicator's own
  // thread on host memory) can take this device's buffers.
  virtual bool takesGradientBuckets() const = 0;
};

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_DEVICES_DEVICE_HPP_
