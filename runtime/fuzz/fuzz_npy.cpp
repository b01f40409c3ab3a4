// libFuzzer target: feeds arbitrary bytes to the .npy parser. Any crash, sanitizer report
// or abort is a bug; errors must come back as a Status.
//
//   cmake -S runtime -B /tmp/build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTFC_FUZZ=ON
//   ninja -C /tmp/build-fuzz fuzz-npy && /tmp/build-fuzz/fuzz-npy -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "tfc/runtime/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tfc::StatusOr<tfc::HostTensor> tensor = tfc::parseNpy(data, size, "fuzz.npy");
  if (!tensor.ok()) {
    if (std::strstr(tensor.status().message(), "fuzz.npy") == nullptr) std::abort();
    return 0;
  }
  // A tensor that parses holds exactly the input's trailing data bytes.
  if (tensor->byteSize() > size) std::abort();
  if (std::memcmp(tensor->data(), data + size - tensor->byteSize(), tensor->byteSize()) != 0) {
    std::abort();
  }
  return 0;
}
