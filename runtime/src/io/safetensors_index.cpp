#include "io/safetensors_index.hpp"

#include <cstdlib>

#include "base/file_util.hpp"
#include "base/json_reader.hpp"

namespace tfc::internal {
namespace {

// "3:14" for |offset| in |text| (lines and columns from 1, columns in bytes).
std::string lineAndColumn(std::string_view text, size_t offset) {
  size_t line = 1;
  size_t lineStart = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      lineStart = i + 1;
    }
  }
  return std::to_string(line) + ":" + std::to_string(offset - lineStart + 1);
}

// Why |shard| may not be read as a shard of an index, or "" when it may.
std::string badShardPath(const std::string& shard) {
  if (shard.empty()) return "is empty";
  if (shard.find('\0') != std::string::npos) return "contains a NUL byte";
  if (shard.front() == '/') return "is absolute";
  size_t begin = 0;
  while (begin <= shard.size()) {
    size_t end = shard.find('/', begin);
    if (end == std::string::npos) end = shard.size();
    std::string_view component(shard.data() + begin, end - begin);
    if (component == "..") return "leaves the index's directory";
    if (component.empty() || component == ".") return "is not a plain relative path";
    begin = end + 1;
  }
  return "";
}

}  // namespace

StatusOr<SafetensorsIndex> parseSafetensorsIndex(std::string_view text, const std::string& path) {
  if (text.size() > kSafetensorsIndexMaxBytes) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: the index is %zu bytes, more than the %zu "
                         "accepted", path.c_str(), text.size(), kSafetensorsIndexMaxBytes);
  }
  JsonReader reader(text);
  // Errors found while reading (a bad value, a duplicate) are recorded at the reader's
  // offset, like syntax errors, so that each comes with its line and column.
  std::map<std::string, std::string, std::less<>> shardOf;
  bool sawWeightMap = false;
  bool parsed = reader.readObject([&](std::string key) {
    if (key != "weight_map") return reader.skipValue();
    if (sawWeightMap) return reader.fail("\"weight_map\" appears twice");
    sawWeightMap = true;
    if (reader.peek() != '{') return reader.fail("\"weight_map\" must be an object");
    return reader.readObject([&](std::string tensor) {
      if (reader.peek() != '"') {
        return reader.fail("the shard of tensor " + quoteForMessage(tensor) +
                           " must be a string");
      }
      std::string shard;
      if (!reader.readString(&shard)) return false;
      std::string why = badShardPath(shard);
      if (!why.empty()) {
        return reader.fail("the shard " + quoteForMessage(shard) + " of tensor " +
                           quoteForMessage(tensor) + " " + why);
      }
      if (tensor.empty()) return reader.fail("a tensor with an empty name");
      auto [it, inserted] = shardOf.emplace(std::move(tensor), shard);
      if (!inserted) {
        return reader.fail("tensor " + quoteForMessage(it->first) + " is listed twice, in " +
                           quoteForMessage(it->second) + " and in " + quoteForMessage(shard));
      }
      return true;
    });
  });
  if (parsed && !reader.atEnd()) parsed = reader.fail("unexpected data after the JSON object");
  if (!parsed) {
    // JsonReader's errors read "at byte N: <what>"; say where as line:column instead.
    std::string what = reader.error();
    size_t offset = reader.offset();
    if (what.rfind("at byte ", 0) == 0) {
      offset = std::strtoull(what.c_str() + 8, nullptr, 10);
      size_t colon = what.find(": ");
      if (colon != std::string::npos) what = what.substr(colon + 2);
    }
    return Status::error(TFC_INVALID_ARGUMENT, "%s:%s: %s", path.c_str(),
                         lineAndColumn(text, offset).c_str(), what.c_str());
  }
  if (!sawWeightMap) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: no \"weight_map\" (a safetensors index maps each tensor to its "
                         "shard file: {\"weight_map\": {\"name\": \"model-00001-of-00002."
                         "safetensors\", ...}})",
                         path.c_str());
  }
  if (shardOf.empty()) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: \"weight_map\" lists no tensors",
                         path.c_str());
  }
  SafetensorsIndex index;
  std::map<std::string_view, size_t> shardNumber;
  for (const auto& [tensor, shard] : shardOf) shardNumber.emplace(shard, 0);
  for (auto& [shard, number] : shardNumber) {
    number = index.shards.size();
    index.shards.emplace_back(shard);
  }
  for (const auto& [tensor, shard] : shardOf) index.tensors.emplace(tensor, shardNumber[shard]);
  return index;
}

}  // namespace tfc::internal
