// libFuzzer target: feeds arbitrary bytes to the safetensors parser. Any crash, sanitizer
// report or abort is a bug; errors must come back as a Status.
//
//   cmake -S runtime -B /tmp/build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTFC_FUZZ=ON
//   ninja -C /tmp/build-fuzz fuzz-safetensors && /tmp/build-fuzz/fuzz-safetensors -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "tfc/runtime/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tfc::StatusOr<tfc::SafetensorsFile> file = tfc::parseSafetensors(data, size, "fuzz.safetensors");
  if (!file.ok()) {
    // Every error names the file.
    if (std::strstr(file.status().message(), "fuzz.safetensors") == nullptr) std::abort();
    return 0;
  }
  // A file that parses must describe only bytes inside the input, without overlaps; touch
  // every tensor byte so that the sanitizers check the bounds.
  uint8_t checksum = 0;
  for (const tfc::SafetensorsTensorInfo& info : file->tensors()) {
    if (info.fileOffset + info.byteSize > size) std::abort();
    for (size_t i = 0; i < info.byteSize; ++i) checksum ^= info.data[i];
    if (file->find(info.name) != &info) std::abort();
  }
  // Round-trip small files through the loader.
  if (!file->tensors().empty()) {
    tfc::StatusOr<tfc::HostTensor> tensor = file->load(file->tensors().front().name);
    if (!tensor.ok()) std::abort();
  }
  volatile uint8_t sink = checksum;
  (void)sink;
  return 0;
}
