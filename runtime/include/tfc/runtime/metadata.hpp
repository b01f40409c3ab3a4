// Reading an artifact's metadata JSON (tfc_artifact_metadata_json): {"model": "gpt2",
// "config": {"n_ctx": 64, "vocab_size": 50257, ...}}.
#ifndef TFC_RUNTIME_METADATA_HPP_
#define TFC_RUNTIME_METADATA_HPP_

#include <cstdint>
#include <optional>
#include <string>

#include "tfc/runtime/runtime.hpp"

namespace tfc {

// The raw value of "key" in the metadata: a number's text or a string's contents; nullopt
// when absent. The metadata is flat apart from "config", and its keys are unique, so a scan
// suffices.
std::optional<std::string> metadataValue(const std::string& json, const std::string& key);
// The value of "key" as an integer; nullopt when absent or not an integer.
std::optional<int64_t> metadataInt(const std::string& json, const std::string& key);

// The model's vocabulary size: "vocab_size" in the metadata's config, else the last
// dimension of the forward entry's logits; 0 when neither is known.
int64_t modelVocabSize(const Artifact& artifact);

}  // namespace tfc

#endif  // TFC_RUNTIME_METADATA_HPP_
