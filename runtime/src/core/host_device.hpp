// Internal: the host as a context's device (a CPU artifact): entries called directly on the
// caller's, the parameters' and the state's buffers, each entry's arena allocated from the
// context's allocator at its first call.
#ifndef TFC_RUNTIME_SRC_CORE_HOST_DEVICE_HPP_
#define TFC_RUNTIME_SRC_CORE_HOST_DEVICE_HPP_

#include <vector>

#include "core/runtime_internal.hpp"
#include "devices/device.hpp"

namespace tfc::internal {

class HostDevice final : public Device {
 public:
  HostDevice(const tfc_artifact_t& table, tfc_allocator_t allocator);
  ~HostDevice() override;
  HostDevice(const HostDevice&) = delete;
  HostDevice& operator=(const HostDevice&) = delete;

  std::string name() const override { return "cpu"; }
  bool usesHostMemory() const override { return true; }
  int32_t hostThreads(int32_t requested) const override { return requested; }
  uint64_t deviceMemoryBytes() const override { return 0; }
  uint64_t hostArenaBytes() const override;
  Status call(const Call& call) override;
  void markHostChanged(bool, bool) override {}
  Status download(const std::vector<void*>&, const std::vector<void*>&) override {
    return Status();
  }
  Status throughHost(const void* send, size_t, void* recv, size_t,
                     const std::function<Status(const void*, void*)>& exchange) override {
    return exchange(send, recv);
  }
  bool takesGradientBuckets() const override { return true; }

 private:
  const tfc_artifact_t& table_;
  tfc_allocator_t allocator_;
  std::vector<Buffer> arenas_;  // per entry, allocated at its first call
  std::vector<void*> inputPointers_, outputPointers_;
};

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_CORE_HOST_DEVICE_HPP_
