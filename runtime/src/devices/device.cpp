#include "devices/device.hpp"

namespace tfc::internal {

Status Device::deviceCollective(int32_t, int32_t, const void*, void*, uint64_t,
                                const std::string&, const std::string& what) {
  return Status::error(TFC_UNIMPLEMENTED, "%s: this device runs no collectives of its own",
                       what.c_str());
}

}  // namespace tfc::internal
