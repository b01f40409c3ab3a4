#include "tfc/runtime/metadata.hpp"

#include "base/json_value.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tfc/artifact_abi.h"

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

namespace {

// Entries one per rank of a group, from the metadata keys |sizeKey|, |ownerKey| and |heldKey|.
StatusOr<PipelineLayout> rankEntries(const std::string& json, const char* sizeKey,
                                     const char* ownerKey, const char* heldKey,
                                     const char* suffix) {
  PipelineLayout layout;
  layout.suffix = suffix;
  std::optional<int64_t> size = metadataInt(json, sizeKey);
  if (!size) return layout;
  auto bad = [&](const std::string& why) {
    return Status::error(TFC_INVALID_ARGUMENT, "the model's metadata \"%s\" %s", ownerKey,
                         why.c_str());
  };
  if (*size < 1) return bad(std::string("comes with a \"") + sizeKey + "\" below 1");
  layout.size = *size;
  internal::JsonValue doc;
  std::string error;
  size_t offset = 0;
  if (!internal::parseJson(json, &doc, &error, &offset)) return bad("is not JSON: " + error);
  const internal::JsonValue* owners = doc.get(ownerKey);
  if (owners == nullptr || owners->kind != internal::JsonValue::kObject) {
    return bad("is missing or not an object");
  }
  for (const auto& [name, value] : owners->members) {
    std::optional<int64_t> stage = value.asInt();
    if (!stage || *stage < 0 || *stage >= layout.size) {
      return bad("gives '" + name + "' a rank outside [0, " + std::to_string(layout.size) + ")");
    }
    layout.owner[name] = *stage;
  }
  // Absent in the artifacts of tfc before per-stage storage: every rank holds every tensor.
  const internal::JsonValue* held = doc.get(heldKey);
  if (held == nullptr) return layout;
  const std::string heldName = std::string("\"") + heldKey + "\"";
  if (held->kind != internal::JsonValue::kObject) {
    return bad("has a " + heldName + " that is not an object");
  }
  for (const auto& [name, stages] : held->members) {
    if (stages.kind != internal::JsonValue::kArray) {
      return bad("has a " + heldName + " entry for '" + name + "' that is not a list of ranks");
    }
    std::vector<int64_t>& list = layout.held[name];
    for (const internal::JsonValue& value : stages.items) {
      std::optional<int64_t> stage = value.asInt();
      if (!stage || *stage < 0 || *stage >= layout.size) {
        return bad("has " + heldName + " give '" + name + "' a rank outside [0, " +
                   std::to_string(layout.size) + ")");
      }
      list.push_back(*stage);
    }
  }
  return layout;
}

}  // namespace

StatusOr<PipelineLayout> pipelineLayout(const std::string& json) {
  return rankEntries(json, TFC_METADATA_PP_SIZE, TFC_METADATA_PP_OWNER, TFC_METADATA_PP_HELD,
                     ".stage");
}

StatusOr<PipelineLayout> expertLayout(const std::string& json) {
  return rankEntries(json, TFC_METADATA_EP_SIZE, TFC_METADATA_EP_OWNER, TFC_METADATA_EP_HELD,
                     ".ep");
}

StatusOr<ProcessMesh> processMesh(const std::string& json) {
  ProcessMesh mesh;
  mesh.tp = metadataInt(json, TFC_METADATA_TP_SIZE).value_or(1);
  mesh.pp = metadataInt(json, TFC_METADATA_PP_SIZE).value_or(1);
  const int64_t world = metadataInt(json, TFC_METADATA_WORLD_SIZE).value_or(mesh.tp * mesh.pp);
  if (mesh.tp < 1 || mesh.pp < 1 || world < 1 || world % (mesh.tp * mesh.pp) != 0) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "the model's metadata gives a world of %lld processes, which is no "
                         "number of replicas of %lld stages of %lld tensor-parallel ranks",
                         static_cast<long long>(world), static_cast<long long>(mesh.pp),
                         static_cast<long long>(mesh.tp));
  }
  mesh.dp = world / (mesh.tp * mesh.pp);
  return mesh;
}

const TensorSplit* TensorParallelLayout::find(const std::string& name) const {
  std::string param = name;
  for (const char* prefix : {"opt.m.", "opt.v.", "opt.buf."}) {
    if (name.rfind(prefix, 0) == 0) param = name.substr(std::strlen(prefix));
  }
  auto it = splits.find(param);
  return it == splits.end() ? nullptr : &it->second;
}

StatusOr<TensorParallelLayout> tensorParallelLayout(const std::string& json) {
  TensorParallelLayout layout;
  std::optional<int64_t> size = metadataInt(json, TFC_METADATA_TP_SIZE);
  if (!size) return layout;
  layout.size = *size;
  // "tp_shards": {"name": [axis, blocks], ...}: names hold no quotes (tfc.param symbols).
  std::string key = std::string("\"") + TFC_METADATA_TP_SHARDS + "\"";
  size_t at = json.find(key);
  size_t open = at == std::string::npos ? at : json.find('{', at);
  size_t close = open == std::string::npos ? open : json.find('}', open);
  auto bad = [&](const char* why) {
    return Status::error(TFC_INVALID_ARGUMENT, "the model's metadata \"%s\" %s",
                         TFC_METADATA_TP_SHARDS, why);
  };
  if (*size < 1 || close == std::string::npos) return bad("is missing or not an object");
  size_t i = open + 1;
  while (true) {
    size_t q0 = json.find('"', i);
    if (q0 == std::string::npos || q0 > close) break;
    size_t q1 = json.find('"', q0 + 1);
    size_t lb = json.find('[', q1);
    size_t rb = json.find(']', lb);
    if (q1 == std::string::npos || lb == std::string::npos || rb == std::string::npos ||
        rb > close) {
      return bad("has an entry that is not \"name\": [axis, blocks]");
    }
    TensorSplit split;
    char* end = nullptr;
    split.axis = std::strtoll(json.c_str() + lb + 1, &end, 10);
    while (*end == ' ' || *end == ',') ++end;
    split.blocks = std::strtoll(end, &end, 10);
    if (split.axis < 0 || split.blocks < 1) return bad("has a negative axis or no blocks");
    layout.splits[json.substr(q0 + 1, q1 - q0 - 1)] = split;
    i = rb + 1;
  }
  return layout;
}

std::vector<int64_t> wholeShape(const TensorSplit& split, std::vector<int64_t> sliceShape,
                                int64_t ranks) {
  sliceShape[static_cast<size_t>(split.axis)] *= ranks;
  return sliceShape;
}

void copySlice(const TensorSplit& split, const std::vector<int64_t>& whole_shape, int64_t ranks,
               int64_t rank, size_t element_bytes, void* whole, void* slice, bool to_slice) {
  // The whole as [outer, blocks, ranks, chunk * inner]; a rank's slice as
  // [outer, blocks, chunk * inner].
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < split.axis; ++d) outer *= whole_shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(split.axis) + 1; d < whole_shape.size(); ++d) {
    inner *= whole_shape[d];
  }
  const int64_t chunk = whole_shape[static_cast<size_t>(split.axis)] / (split.blocks * ranks);
  const size_t run = static_cast<size_t>(chunk * inner) * element_bytes;
  auto* w = static_cast<uint8_t*>(whole);
  auto* s = static_cast<uint8_t*>(slice);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t b = 0; b < split.blocks; ++b) {
      uint8_t* wp = w + static_cast<size_t>((o * split.blocks + b) * ranks + rank) * run;
      uint8_t* sp = s + static_cast<size_t>(o * split.blocks + b) * run;
      if (to_slice) {
        std::memcpy(sp, wp, run);
      } else {
        std::memcpy(wp, sp, run);
      }
    }
  }
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
