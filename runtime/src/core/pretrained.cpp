// tfc_params_load_pretrained: Hugging Face checkpoints as save_pretrained writes them (one
// model.safetensors, or shards under model.safetensors.index.json), with names bound by the
// rules of runtime.h, dtypes converted on load, and buffers that are not parameters skipped.
//
// The load runs in two phases so that a bad checkpoint changes nothing: first every file is
// mapped and its header parsed, the index checked against the shards and every parameter
// bound (tensor_match.hpp); only then is storage allocated and the data read, shard by shard.
// Mapping costs address space, not memory, so holding every shard's mapping through the
// checks is cheap, and it means the bytes read are the bytes checked.
#include <sys/stat.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/file_util.hpp"
#include "base/float_convert.hpp"
#include "core/runtime_internal.hpp"
#include "io/safetensors_index.hpp"

namespace tfc::internal {
namespace {

constexpr const char* kSingleFileName = "model.safetensors";
constexpr const char* kIndexFileName = "model.safetensors.index.json";

// One safetensors file of the checkpoint, mapped.
struct Shard {
  std::string name;  // as the index lists it; the path for a single file
  std::string path;  // as opened
  FileContents contents;
  std::vector<SafetensorsFile> parsed;  // one element once parsed (no default constructor)
};

// What a checkpoint path names: its files and, for a sharded one, its index.
struct Checkpoint {
  std::string where;  // named at the start of every error
  std::vector<Shard> shards;
  bool sharded = false;
  SafetensorsIndex index;
};

enum class PathKind { kMissing, kDirectory, kFile };

PathKind pathKind(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return PathKind::kMissing;
  return S_ISDIR(info.st_mode) ? PathKind::kDirectory : PathKind::kFile;
}

bool endsWith(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string directoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string joinPath(const std::string& directory, const std::string& name) {
  return directory.empty() || directory.back() == '/' ? directory + name : directory + "/" + name;
}

// Finds the files of the checkpoint at |path| (see tfc_params_load_pretrained).
Status locateCheckpoint(const std::string& path, Checkpoint* out) {
  std::string indexPath;
  PathKind kind = pathKind(path);
  if (kind == PathKind::kDirectory) {
    std::string single = joinPath(path, kSingleFileName);
    std::string index = joinPath(path, kIndexFileName);
    if (pathKind(single) != PathKind::kMissing) {
      out->where = single;
      out->shards.push_back(Shard{single, single, {}, {}});
      return Status();
    }
    if (pathKind(index) == PathKind::kMissing) {
      std::string hint;
      if (pathKind(joinPath(path, "pytorch_model.bin")) != PathKind::kMissing ||
          pathKind(joinPath(path, "pytorch_model.bin.index.json")) != PathKind::kMissing) {
        hint = "; its pytorch_model.bin is a pickle, which tfc does not read: convert it to "
               "safetensors (save_pretrained(..., safe_serialization=True))";
      }
      return Status::error(TFC_NOT_FOUND, "%s: a checkpoint directory, but it has neither %s nor "
                           "%s%s", path.c_str(), kSingleFileName, kIndexFileName, hint.c_str());
    }
    indexPath = index;
  } else if (kind == PathKind::kFile && endsWith(path, ".json")) {
    indexPath = path;
  } else {
    // A single file; a missing one is reported by readFile with the reason.
    out->where = path;
    out->shards.push_back(Shard{path, path, {}, {}});
    return Status();
  }
  TFC_ASSIGN_OR_RETURN(FileContents text, readFile(indexPath, FileMapping::kNone));
  TFC_ASSIGN_OR_RETURN(
      out->index,
      parseSafetensorsIndex(std::string_view(reinterpret_cast<const char*>(text.data), text.size),
                            indexPath));
  out->where = indexPath;
  out->sharded = true;
  std::string directory = directoryOf(indexPath);
  for (const std::string& shard : out->index.shards) {
    out->shards.push_back(Shard{shard, joinPath(directory, shard), {}, {}});
  }
  return Status();
}

// Maps and parses every file of |checkpoint|.
Status openShards(Checkpoint& checkpoint, bool copy) {
  for (size_t s = 0; s < checkpoint.shards.size(); ++s) {
    Shard& shard = checkpoint.shards[s];
    auto contents = readFile(shard.path, copy ? FileMapping::kReadOnly : FileMapping::kCopyOnWrite);
    if (!contents.ok() && checkpoint.sharded) {
      // Name a tensor the index puts there, so that the user sees which download is missing.
      std::string tensor;
      size_t count = 0;
      for (const auto& [name, shardIndex] : checkpoint.index.tensors) {
        if (shardIndex != s) continue;
        if (count++ == 0) tensor = name;
      }
      std::string others = count > 1 ? " and " + std::to_string(count - 1) + " more" : "";
      return Status::error(contents.status().code(), "%s: shard %s (which holds %s%s) cannot be "
                           "read: %s", checkpoint.where.c_str(), quoteForMessage(shard.name).c_str(),
                           quoteForMessage(tensor).c_str(), others.c_str(),
                           contents.status().message());
    }
    if (!contents.ok()) return std::move(contents).takeStatus();
    shard.contents = std::move(*contents);
    TFC_ASSIGN_OR_RETURN(SafetensorsFile parsed,
                         SafetensorsFile::parse(shard.contents.data, shard.contents.size,
                                                shard.path));
    shard.parsed.push_back(std::move(parsed));
  }
  return Status();
}

// The tensors of every shard, checked against the index: each listed tensor is in its
// shard, and no tensor is in two shards. Tensors a shard has beyond the index's list are
// taken as well, as Hugging Face's loader takes them.
StatusOr<std::vector<SourceTensor>> collectTensors(const Checkpoint& checkpoint) {
  std::vector<SourceTensor> tensors;
  std::map<std::string_view, const std::string*> shardOf;
  ProblemList problems;
  for (const Shard& shard : checkpoint.shards) {
    const std::string* file = checkpoint.sharded ? &shard.name : nullptr;
    for (const SafetensorsTensorInfo& info : shard.parsed.front().tensors()) {
      auto [it, inserted] = shardOf.emplace(info.name, &shard.name);
      if (!inserted) {
        problems.add(TFC_DATA_LOSS, "tensor " + quoteForMessage(info.name) +
                                        " is in two shards, " + quoteForMessage(*it->second) +
                                        " and " + quoteForMessage(shard.name));
        continue;
      }
      tensors.push_back({&info, file});
    }
  }
  for (const auto& [name, shardIndex] : checkpoint.index.tensors) {
    const Shard& shard = checkpoint.shards[shardIndex];
    if (shard.parsed.front().find(name) == nullptr) {
      problems.add(TFC_DATA_LOSS, "the index lists tensor " + quoteForMessage(name) + " in " +
                                      quoteForMessage(shard.name) + ", which does not have it");
    }
  }
  if (problems.empty()) return tensors;
  return problems.status(checkpoint.where);
}

Status loadPretrained(tfc_params_t* params, const std::string& path,
                      const tfc_pretrained_load_options_t& options) {
  Checkpoint checkpoint;
  TFC_RETURN_IF_ERROR(locateCheckpoint(path, &checkpoint));
  TFC_RETURN_IF_ERROR(openShards(checkpoint, options.copy));
  TFC_ASSIGN_OR_RETURN(std::vector<SourceTensor> tensors, collectTensors(checkpoint));
  const tfc_artifact_t& table = *params->artifact->table;
  MatchRules rules;
  rules.allowUnexpected = true;
  rules.convertFloats = true;
  rules.dropPrefix = true;
  // A tensor-parallel artifact's split parameters are read whole, and each rank keeps its
  // slice (WholeParams).
  TFC_ASSIGN_OR_RETURN(WholeParams all, wholeParams(params));
  TFC_ASSIGN_OR_RETURN(TensorMatch match, matchTensors(checkpoint.where, tensors,
                                                       all.descs.data(), table.num_params,
                                                       "parameter", rules));

  // Which file each parameter comes from, and whether it is used in place: the file is
  // mapped copy-on-write, the dtypes are equal, the parameter has no storage yet (storage
  // once handed out must not move) and the tensor is as aligned as an allocated buffer.
  const size_t count = match.sources.size();
  std::map<const SafetensorsTensorInfo*, size_t> paramOf;
  std::vector<bool> inPlace(count, false);
  for (size_t i = 0; i < count; ++i) {
    const SafetensorsTensorInfo* info = match.sources[i]->info;
    paramOf.emplace(info, i);
    inPlace[i] = params->artifact->paramHeld[i] && all.splits[i] == nullptr &&
                 info->dtype == static_cast<tfc_dtype_t>(table.params[i].dtype) &&
                 params->buffers[i].data == nullptr &&
                 reinterpret_cast<uintptr_t>(info->data) % TFC_ARENA_ALIGNMENT == 0;
  }
  // Storage for the copies first: an allocation failure then leaves the values as they
  // were (a parameter given storage stays unset and zero, as before).
  for (size_t s = 0; s < checkpoint.shards.size(); ++s) {
    const Shard& shard = checkpoint.shards[s];
    const bool mappable = shard.contents.mapped && shard.contents.writable;
    for (const SafetensorsTensorInfo& info : shard.parsed.front().tensors()) {
      auto it = paramOf.find(&info);
      if (it == paramOf.end()) continue;
      if (!mappable) inPlace[it->second] = false;
      if (inPlace[it->second] || !params->artifact->paramHeld[it->second]) continue;
      auto storage = paramStorage(params, static_cast<int32_t>(it->second));
      if (!storage.ok()) return std::move(storage).takeStatus();
    }
  }
  // Nothing fails from here on.
  for (Shard& shard : checkpoint.shards) {
    bool anyInPlace = false;
    for (const SafetensorsTensorInfo& info : shard.parsed.front().tensors()) {
      auto it = paramOf.find(&info);
      if (it == paramOf.end()) continue;
      const size_t i = it->second;
      Buffer& buffer = params->buffers[i];
      if (!params->artifact->paramHeld[i]) {
        // Another pipeline stage's parameter: its ranks load it.
      } else if (inPlace[i]) {
        // Writable: the mapping is private and copy-on-write (contents.writable).
        buffer.data = const_cast<uint8_t*>(info.data);
        buffer.byteSize = info.byteSize;
        params->mapped[i] = true;
        anyInPlace = true;
      } else if (info.byteSize > 0) {
        const size_t from = tfc_dtype_size(info.dtype);
        const auto to = static_cast<tfc_dtype_t>(table.params[i].dtype);
        // A split parameter: converted whole, then this rank's slice kept.
        std::vector<uint8_t> whole(all.splits[i] != nullptr
                                       ? info.byteSize / from * tfc_dtype_size(to)
                                       : 0);
        uint8_t* into = whole.empty() ? static_cast<uint8_t*>(buffer.data) : whole.data();
        forEachLoadChunk(info.byteSize, [&](size_t offset, size_t length) {
          convertFloats(info.dtype, info.data + offset, to,
                        into + offset / from * tfc_dtype_size(to), length / from);
          releaseMappedPages(shard.contents, info.data + offset, length);
        });
        if (!whole.empty()) all.keepSlice(i, whole.data(), buffer.data);
      }
      params->set[i] = true;
    }
    // The params keep the mapping of a shard they use in place; any other is unmapped now,
    // before the next shard is read.
    if (anyInPlace) params->mappings.push_back(shard.contents.owner);
    shard.contents.owner.reset();
  }

  if (options.on_tensor != nullptr) {
    for (const Shard& shard : checkpoint.shards) {
      for (const SafetensorsTensorInfo& info : shard.parsed.front().tensors()) {
        auto it = paramOf.find(&info);
        tfc_pretrained_tensor_t tensor;
        tensor.name = info.name.c_str();
        tensor.file = shard.path.c_str();
        tensor.dtype = info.dtype;
        tensor.param_index = it == paramOf.end() ? -1 : static_cast<int32_t>(it->second);
        options.on_tensor(options.user_data, &tensor);
      }
    }
  }
  return Status();
}

}  // namespace
}  // namespace tfc::internal

extern "C" {

void tfc_pretrained_load_options_initialize(tfc_pretrained_load_options_t* out_options) {
  if (out_options == nullptr) return;
  std::memset(out_options, 0, sizeof(*out_options));
}

tfc_status_t tfc_params_load_pretrained(tfc_params_t* params, const char* path,
                                        const tfc_pretrained_load_options_t* options) {
  if (params == nullptr || path == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_params_load_pretrained: null argument");
  }
  tfc_pretrained_load_options_t defaults;
  tfc_pretrained_load_options_initialize(&defaults);
  if (options == nullptr) options = &defaults;
  return tfc::internal::loadPretrained(params, path, *options).release();
}

}  // extern "C"
