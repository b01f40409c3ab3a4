// A small command-line helper for npy_numpy_check.py, which cross-checks the runtime's .npy
// reader and writer against NumPy:
//   tfc-runtime-npy-tool info IN.npy        prints "DTYPE d0,d1,... BYTES FNV1A64HEX"
//   tfc-runtime-npy-tool copy IN.npy OUT.npy  reads with readNpy, writes with writeNpy
// Errors print "error: CODE: message" and exit with status 1.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "tfc/runtime/npy.hpp"

namespace {

uint64_t fnv1a64(const void* data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const auto* bytes = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

int fail(const tfc::Status& status) {
  std::fprintf(stderr, "error: %s\n", status.toString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "info") == 0) {
    tfc::StatusOr<tfc::HostTensor> tensor = tfc::readNpy(argv[2]);
    if (!tensor.ok()) return fail(tensor.status());
    std::string shape;
    for (size_t i = 0; i < tensor->rank(); ++i) {
      if (i > 0) shape += ',';
      shape += std::to_string(tensor->shape()[i]);
    }
    std::printf("%s %s %zu %016" PRIx64 "\n", tfc_dtype_name(tensor->dtype()),
                shape.empty() ? "scalar" : shape.c_str(), tensor->byteSize(),
                fnv1a64(tensor->data(), tensor->byteSize()));
    return 0;
  }
  if (argc >= 4 && std::strcmp(argv[1], "copy") == 0) {
    tfc::StatusOr<tfc::HostTensor> tensor = tfc::readNpy(argv[2]);
    if (!tensor.ok()) return fail(tensor.status());
    tfc::Status status = tfc::writeNpy(argv[3], tensor->view());
    if (!status.ok()) return fail(status);
    return 0;
  }
  std::fprintf(stderr, "usage: %s info IN.npy | copy IN.npy OUT.npy\n", argv[0]);
  return 2;
}
