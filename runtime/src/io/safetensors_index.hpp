// Internal: the index of a sharded Hugging Face checkpoint, model.safetensors.index.json:
//
//   {"metadata": {"total_size": 26953662464}, "weight_map": {"lm_head.weight":
//    "model-00003-of-00003.safetensors", "model.embed_tokens.weight": "model-00001-...", ...}}
//
// The parser trusts nothing (the file comes with a downloaded model): the JSON is parsed
// strictly, "weight_map" must be an object of strings, a tensor may be listed once, and a
// shard must be a relative path that stays inside the index's directory (no "..", not
// absolute), so that an index cannot make the loader read /etc/passwd or a sibling model.
// "metadata" and any other member are read and ignored. Every error names the file, and a
// syntax error its line and column.
#ifndef TFC_RUNTIME_SRC_SAFETENSORS_INDEX_HPP_
#define TFC_RUNTIME_SRC_SAFETENSORS_INDEX_HPP_

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tfc/runtime/status.hpp"

namespace tfc::internal {

// The largest index file read: 100 MB, as for a safetensors header (real ones are some
// hundred kilobytes).
constexpr size_t kSafetensorsIndexMaxBytes = 100'000'000;

struct SafetensorsIndex {
  // The shard files, relative to the index's directory, sorted and distinct.
  std::vector<std::string> shards;
  // Each listed tensor and the index in |shards| of the file the index puts it in.
  std::map<std::string, size_t, std::less<>> tensors;
};

// Parses |text|, the contents of the index file |path| (named in errors).
StatusOr<SafetensorsIndex> parseSafetensorsIndex(std::string_view text, const std::string& path);

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_SAFETENSORS_INDEX_HPP_
