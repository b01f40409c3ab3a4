// libFuzzer target: feeds arbitrary bytes to the parser of model.safetensors.index.json (the
// index of a sharded Hugging Face checkpoint, which comes with a downloaded model). Any
// crash, sanitizer report or abort is a bug; errors must come back as a Status naming the
// file, and an index that parses must name only shards inside its directory.
//
//   cmake -S runtime -B /tmp/build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTFC_FUZZ=ON
//   ninja -C /tmp/build-fuzz fuzz-safetensors-index
//   /tmp/build-fuzz/fuzz-safetensors-index -max_total_time=60 runtime/fuzz/corpus/safetensors_index
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "io/safetensors_index.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto index = tfc::internal::parseSafetensorsIndex(text, "fuzz.json");
  if (!index.ok()) {
    if (std::strstr(index.status().message(), "fuzz.json") == nullptr) std::abort();
    return 0;
  }
  if (index->tensors.empty() || index->shards.empty()) std::abort();
  for (const std::string& shard : index->shards) {
    if (shard.empty() || shard.front() == '/' || shard.find('\0') != std::string::npos) {
      std::abort();
    }
    // No ".." component: "/../", a leading "../", a trailing "/..", or ".." alone.
    std::string wrapped = "/" + shard + "/";
    if (wrapped.find("/../") != std::string::npos) std::abort();
  }
  for (const auto& [name, shard] : index->tensors) {
    if (name.empty() || shard >= index->shards.size()) std::abort();
  }
  return 0;
}
