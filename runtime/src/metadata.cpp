#include "tfc/runtime/metadata.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace tfc {

std::optional<std::string> metadataValue(const std::string& json, const std::string& key) {
  std::string quoted = "\"" + key + "\"";
  size_t at = 0;
  while ((at = json.find(quoted, at)) != std::string::npos) {
    size_t i = at + quoted.size();
    while (i < json.size() && std::isspace(static_cast<unsigned char>(json[i]))) ++i;
    if (i >= json.size() || json[i] != ':') {
      at += quoted.size();  // the text was a value, not a key
      continue;
    }
    ++i;
    while (i < json.size() && std::isspace(static_cast<unsigned char>(json[i]))) ++i;
    if (i < json.size() && json[i] == '"') {
      size_t end = json.find('"', i + 1);
      if (end == std::string::npos) return std::nullopt;
      return json.substr(i + 1, end - i - 1);
    }
    size_t end = i;
    while (end < json.size() && json[end] != ',' && json[end] != '}' &&
           !std::isspace(static_cast<unsigned char>(json[end]))) {
      ++end;
    }
    return json.substr(i, end - i);
  }
  return std::nullopt;
}

std::optional<int64_t> metadataInt(const std::string& json, const std::string& key) {
  auto text = metadataValue(json, key);
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text->c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || std::isspace(static_cast<unsigned char>((*text)[0]))) {
    return std::nullopt;
  }
  return static_cast<int64_t>(value);
}

int64_t modelVocabSize(const Artifact& artifact) {
  std::optional<int64_t> vocab = metadataInt(std::string(artifact.metadataJson()), "vocab_size");
  if (vocab && *vocab > 0) return *vocab;
  for (int32_t e = 0; e < artifact.entryCount(); ++e) {
    const tfc_entry_t& entry = artifact.entry(e);
    if (std::string(entry.name) != "forward") continue;
    for (int32_t i = 0; i < entry.num_outputs; ++i) {
      if (std::string(entry.outputs[i].name) == "logits" && entry.outputs[i].rank >= 1) {
        return entry.outputs[i].shape[entry.outputs[i].rank - 1];
      }
    }
  }
  return 0;
}

}  // namespace tfc
