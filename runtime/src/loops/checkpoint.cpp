#include "tfc/runtime/checkpoint.hpp"

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <vector>

#include "tfc/runtime/communicator.hpp"
#include "tfc/runtime/metadata.hpp"
#include "tfc/runtime/safetensors.hpp"

namespace tfc {
namespace {

std::string describe(tfc_dtype_t dtype, const std::vector<int64_t>& shape) {
  return std::string(tfc_dtype_name(dtype)) + " " + formatShape(shape);
}

int64_t elementCount(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

StatusOr<std::map<int32_t, int32_t>> zeroShardedState(const Artifact& artifact) {
  std::map<int32_t, int32_t> sharded;
  std::optional<std::string> list =
      metadataValue(std::string(artifact.metadataJson()), TFC_METADATA_ZERO_SHARDS);
  if (!list || list->empty()) return sharded;
  auto bad = [&](const std::string& why) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: corrupt artifact: metadata \"%s\": %s",
                         std::string(artifact.path()).c_str(), TFC_METADATA_ZERO_SHARDS,
                         why.c_str());
  };
  auto indexOf = [](int32_t count, auto&& nameOf, const std::string& name) {
    for (int32_t i = 0; i < count; ++i) {
      if (name == nameOf(i)) return i;
    }
    return -1;
  };
  size_t begin = 0;
  while (begin <= list->size()) {
    size_t end = list->find(',', begin);
    if (end == std::string::npos) end = list->size();
    std::string entry = list->substr(begin, end - begin);
    size_t eq = entry.find('=');
    if (eq == std::string::npos) return bad("'" + entry + "' is not state=param");
    std::string stateName = entry.substr(0, eq), paramName = entry.substr(eq + 1);
    int32_t s = indexOf(artifact.stateCount(),
                        [&](int32_t i) { return std::string(artifact.state(i).name); }, stateName);
    int32_t p = indexOf(artifact.paramCount(),
                        [&](int32_t i) { return std::string(artifact.param(i).name); }, paramName);
    if (s < 0 || p < 0) {
      return bad("'" + entry + "' names no " + (s < 0 ? "state" : "parameter") +
                 " of the artifact");
    }
    if (artifact.state(s).dtype != TFC_ABI_F32 || artifact.state(s).rank != 1 ||
        artifact.param(p).dtype != TFC_ABI_F32) {
      return bad("'" + stateName + "' is not a 1-D f32 block of f32 '" + paramName + "'");
    }
    sharded[s] = p;
    begin = end + 1;
  }
  return sharded;
}

// Tensor parallel: every rank holds a slice of each split parameter and state tensor; each of
// |tensors| that is one (by checkpoint name) is replaced by the whole, gathered over the rank's
// "tp" group (the world with --tp alone: block t from its rank t), its bytes in |storage|. With
// --dp x --tp every group gathers (each rank takes part in its group's collectives); world
// rank 0 writes.
Status gatherTensorParallel(const TensorParallelLayout& tp, const ProcessMesh& mesh,
                            std::vector<NamedTensorView>* tensors,
                            std::vector<std::vector<uint8_t>>* storage) {
  TFC_ASSIGN_OR_RETURN(Communicator * group, groupCommunicator("tp", mesh));
  const std::string statePrefix(kStatePrefix);
  for (NamedTensorView& named : *tensors) {
    const std::string& key = named.name;
    const TensorSplit* split =
        tp.find(key.rfind(statePrefix, 0) == 0 ? key.substr(statePrefix.size()) : key);
    if (split == nullptr) continue;
    if (named.tensor.data == nullptr) {  // another pipeline stage's: whole at its owner
      named.tensor.shape = wholeShape(*split, named.tensor.shape, tp.size);
      named.tensor.byteSize *= static_cast<size_t>(tp.size);
      continue;
    }
    const TensorView& slice = named.tensor;
    if (slice.dtype != TFC_DTYPE_F32) {
      return Status::error(TFC_UNIMPLEMENTED, "'%s': tensor parallelism gathers f32 only",
                           key.c_str());
    }
    const size_t count = slice.byteSize / sizeof(float);
    std::vector<uint8_t> blocks(slice.byteSize * static_cast<size_t>(tp.size));
    TFC_RETURN_IF_ERROR(group->allGather(static_cast<const float*>(slice.data),
                                         reinterpret_cast<float*>(blocks.data()), count, key));
    std::vector<int64_t> shape = wholeShape(*split, slice.shape, tp.size);
    storage->emplace_back(blocks.size());
    for (int64_t r = 0; r < tp.size; ++r) {
      copySlice(*split, shape, tp.size, r, sizeof(float), storage->back().data(),
                blocks.data() + static_cast<size_t>(r) * slice.byteSize, /*to_slice=*/false);
    }
    named.tensor = TensorView{TFC_DTYPE_F32, shape, storage->back().data(), blocks.size()};
  }
  return Status();
}

// Pipeline parallel: a tensor that one stage owns (its layers' parameters and their optimizer
// state, f16's loss-scaler step counter) is current on that rank alone; every rank takes its
// bytes from there (a broadcast from the owner over the stages).
// Expert parallel likewise: an expert's tensors from the rank that holds them, over
// |stages| = the world.
Status gatherOwnedTensors(const PipelineLayout& pp, Communicator* stages,
                          std::vector<NamedTensorView>* tensors,
                          std::vector<std::vector<uint8_t>>* storage) {
  for (NamedTensorView& named : *tensors) {
    std::string name = named.name;
    if (name.rfind(kStatePrefix, 0) == 0) name = name.substr(std::strlen(kStatePrefix));
    auto owner = pp.owner.find(name);
    if (owner == pp.owner.end()) continue;
    const auto* bytes = static_cast<const uint8_t*>(named.tensor.data);
    if (bytes != nullptr) {
      storage->emplace_back(bytes, bytes + named.tensor.byteSize);
    } else {  // another stage's, received whole from its owner
      storage->emplace_back(named.tensor.byteSize);
    }
    TFC_RETURN_IF_ERROR(stages->broadcast(storage->back().data(), named.tensor.byteSize,
                                          static_cast<int>(owner->second), named.name));
    named.tensor.data = storage->back().data();
  }
  return Status();
}

Status saveCheckpoint(const std::string& path, const Artifact& artifact, const Params& params,
                      const Context& context, std::map<std::string, std::string> metadata) {
  // A GPU context's parameters and state as train_step left them.
  TFC_RETURN_IF_ERROR(context.download());
  TFC_ASSIGN_OR_RETURN(TensorParallelLayout tp,
                       tensorParallelLayout(std::string(artifact.metadataJson())));
  TFC_ASSIGN_OR_RETURN(ProcessMesh mesh, processMesh(std::string(artifact.metadataJson())));
  std::vector<NamedTensorView> tensors;
  // Another pipeline stage's tensor has no storage here: a view of its shape without data,
  // which gatherOwnedTensors fills from its owner.
  auto absent = [](const tfc_tensor_desc_t& desc) {
    return TensorView{static_cast<tfc_dtype_t>(desc.dtype), shapeOf(desc), nullptr,
                      static_cast<size_t>(tfc_tensor_desc_byte_size(&desc))};
  };
  for (int32_t i = 0; i < artifact.paramCount(); ++i) {
    if (!params.isHeld(i)) {
      tensors.push_back({artifact.param(i).name, absent(artifact.param(i))});
      continue;
    }
    TFC_ASSIGN_OR_RETURN(tfc_tensor_ref_t ref, params.tensor(i));
    tensors.push_back({artifact.param(i).name, tensorView(ref)});
  }
  // ZeRO: every rank of a data-parallel group (the world without --tp) holds one block of
  // these; the file holds them whole, in their parameter's shape, so that it resumes on any
  // number of ranks (or on one process). With --tp that shape is the rank's slice, made
  // whole below like the parameter's.
  TFC_ASSIGN_OR_RETURN(auto sharded, zeroShardedState(artifact));
  Communicator* dataGroup = nullptr;
  if (!sharded.empty()) {
    TFC_ASSIGN_OR_RETURN(dataGroup, groupCommunicator("dp", mesh));
  }
  std::vector<std::vector<uint8_t>> storage;
  for (int32_t i = 0; i < artifact.stateCount(); ++i) {
    TFC_ASSIGN_OR_RETURN(tfc_tensor_ref_t ref, context.state(i));
    TensorView view = ref.data != nullptr ? tensorView(ref) : absent(artifact.state(i));
    if (auto shard = sharded.find(i); shard != sharded.end() && ref.data == nullptr) {
      view = absent(artifact.param(shard->second));  // whole, as the owner gathers it
    } else if (shard != sharded.end()) {
      size_t block = ref.byte_size / sizeof(float);
      storage.emplace_back(ref.byte_size * static_cast<size_t>(dataGroup->size()));
      float* all = reinterpret_cast<float*>(storage.back().data());
      TFC_RETURN_IF_ERROR(dataGroup->allGather(static_cast<const float*>(ref.data), all, block,
                                               artifact.state(i).name));
      view.shape = shapeOf(artifact.param(shard->second));
      view.data = all;
      view.byteSize = static_cast<size_t>(elementCount(view.shape)) * sizeof(float);
    }
    tensors.push_back({std::string(kStatePrefix) + artifact.state(i).name, view});
  }
  // With --tp and --pp: every stage's tensor-parallel group makes its tensors whole, then the
  // stages holding the same slice take each tensor from its owner.
  if (tp.size > 1) TFC_RETURN_IF_ERROR(gatherTensorParallel(tp, mesh, &tensors, &storage));
  TFC_ASSIGN_OR_RETURN(PipelineLayout pp, pipelineLayout(std::string(artifact.metadataJson())));
  if (pp.size > 1) {
    // The stages of this rank's data-parallel replica that hold its tensor-parallel slice.
    TFC_ASSIGN_OR_RETURN(Communicator * stages, groupCommunicator("pp", mesh));
    TFC_RETURN_IF_ERROR(gatherOwnedTensors(pp, stages, &tensors, &storage));
  }
  TFC_ASSIGN_OR_RETURN(PipelineLayout ep, expertLayout(std::string(artifact.metadataJson())));
  if (ep.size > 1) {
    TFC_ASSIGN_OR_RETURN(Communicator * world, worldCommunicator());
    TFC_RETURN_IF_ERROR(gatherOwnedTensors(ep, world, &tensors, &storage));
  }
  if (!sharded.empty() || tp.size > 1 || pp.size > 1 || ep.size > 1) {
    // Rank 0 alone writes (data parallel: the parameters are the same everywhere).
    TFC_ASSIGN_OR_RETURN(Communicator * world, worldCommunicator());
    if (world->rank() != 0) return Status();
  }
  metadata["format"] = kCheckpointFormat;
  metadata["module_hash"] = std::string(artifact.moduleHash());
  metadata["model_metadata"] = std::string(artifact.metadataJson());
  return writeSafetensors(path, tensors, metadata);
}

Status checkCheckpointModel(const std::string& path, const std::map<std::string, std::string>& metadata,
                      const Artifact& artifact, const char* hint) {
  auto hash = metadata.find("module_hash");
  std::string ours(artifact.moduleHash());
  if (hash != metadata.end() && hash->second == ours) return Status();
  return Status::error(TFC_FAILED_PRECONDITION,
                       "%s: this checkpoint was written for another model (module hash "
                       "%.16s..., this model %s is %.16s...); %s",
                       path.c_str(), hash == metadata.end() ? "(none)" : hash->second.c_str(),
                       std::string(artifact.path()).c_str(), ours.c_str(), hint);
}

StatusOr<std::map<std::string, std::string>> loadCheckpoint(const std::string& path,
                                                            const Artifact& artifact,
                                                            Params& params, Context& context) {
  auto file = SafetensorsFile::open(path);
  if (!file.ok()) return std::move(file).takeStatus();
  const auto& metadata = file->metadata();
  auto format = metadata.find("format");
  if (format == metadata.end() || format->second != kCheckpointFormat) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: not a tfc-run training checkpoint (its __metadata__ has no "
                         "format \"%s\"); to start training from plain weights give "
                         "--weights instead of --resume",
                         path.c_str(), kCheckpointFormat);
  }
  Status sameModel = checkCheckpointModel(path, metadata, artifact,
                                    "resume with the model that wrote it, or start from its "
                                    "weights with --weights");
  if (!sameModel.ok()) return sameModel;

  // ZeRO: a sharded state is whole in the file; this rank takes its block.
  TFC_ASSIGN_OR_RETURN(auto sharded, zeroShardedState(artifact));
  // Tensor parallel (tfc --tp=M): the file holds whole tensors; this rank takes its slice.
  TFC_ASSIGN_OR_RETURN(TensorParallelLayout tp,
                       tensorParallelLayout(std::string(artifact.metadataJson())));
  int rank = 0;  // in the data-parallel group (the world without --tp)
  if (!sharded.empty()) {
    TFC_ASSIGN_OR_RETURN(ProcessMesh mesh, processMesh(std::string(artifact.metadataJson())));
    TFC_ASSIGN_OR_RETURN(Communicator * dataGroup, groupCommunicator("dp", mesh));
    rank = dataGroup->rank();
  }
  int64_t tpRank = 0;
  if (tp.size > 1) {
    TFC_ASSIGN_OR_RETURN(Communicator * world, worldCommunicator());
    tpRank = world->rank() % tp.size;
  }
  // The --tp artifacts of tfc before tensor-parallel generation had no inference entries and
  // so no KV cache, which a checkpoint does not need (generation rewrites it): between a
  // checkpoint written with --tp and an artifact compiled without it, or the reverse, the model
  // state that one side lacks is skipped (the context's own stays as it initialized it).
  // Parameters and the training state must match.
  auto writer = metadata.find("model_metadata");
  const bool writtenWithTp =
      writer != metadata.end() && metadataInt(writer->second, TFC_METADATA_TP_SIZE).value_or(1) > 1;
  const bool skipLackingState = writtenWithTp != (tp.size > 1);
  const std::string statePrefix(kStatePrefix);
  // The model's own state (not the training state that tfc-train-step and tfc-autocast add:
  // opt.*, train.*, amp.*, which every training artifact of the module has alike).
  auto skippable = [&](const std::string& name) {
    if (!skipLackingState || name.rfind(statePrefix, 0) != 0) return false;
    for (const char* training : {"opt.", "train.", "amp."}) {
      if (name.compare(statePrefix.size(), std::strlen(training), training) == 0) return false;
    }
    return true;
  };
  auto splitOf = [&](const std::string& name) -> const TensorSplit* {
    if (tp.size <= 1) return nullptr;
    const std::string prefix(kStatePrefix);
    return tp.find(name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name);
  };
  // Check everything before changing anything.
  std::vector<const SafetensorsTensorInfo*> paramInfos, stateInfos;
  std::set<std::string> expected;
  std::vector<std::string> problems;
  auto check = [&](const std::string& name, const tfc_tensor_desc_t& desc)
      -> const SafetensorsTensorInfo* {
    expected.insert(name);
    const SafetensorsTensorInfo* info = file->find(name);
    auto dtype = static_cast<tfc_dtype_t>(desc.dtype);
    std::vector<int64_t> shape = shapeOf(desc);
    if (const TensorSplit* split = splitOf(name)) shape = wholeShape(*split, shape, tp.size);
    if (info == nullptr && skippable(name)) {
      return nullptr;  // skipped below
    } else if (info == nullptr) {
      problems.push_back("'" + name + "' is missing");
    } else if (info->dtype != dtype || info->shape != shape) {
      problems.push_back("'" + name + "' is " + describe(info->dtype, info->shape) +
                         ", the model has " + describe(dtype, shape));
      info = nullptr;
    }
    return info;
  };
  for (int32_t i = 0; i < artifact.paramCount(); ++i) {
    paramInfos.push_back(check(artifact.param(i).name, artifact.param(i)));
  }
  for (int32_t i = 0; i < artifact.stateCount(); ++i) {
    auto shard = sharded.find(i);
    tfc_tensor_desc_t desc = artifact.state(i);
    if (shard != sharded.end()) desc = artifact.param(shard->second);  // whole in the file
    stateInfos.push_back(check(std::string(kStatePrefix) + artifact.state(i).name, desc));
  }
  for (const SafetensorsTensorInfo& info : file->tensors()) {
    if (expected.count(info.name)) continue;
    if (skippable(info.name)) continue;
    problems.push_back("unexpected tensor '" + info.name + "'");
  }
  if (!problems.empty()) {
    std::string text;
    for (size_t i = 0; i < problems.size() && i < 8; ++i) text += (i ? "; " : "") + problems[i];
    if (problems.size() > 8) text += "; and " + std::to_string(problems.size() - 8) + " more";
    return Status::error(TFC_INVALID_ARGUMENT, "%s: does not fit this model: %s", path.c_str(),
                         text.c_str());
  }

  for (int32_t i = 0; i < artifact.paramCount(); ++i) {
    if (!params.isHeld(i)) {  // another pipeline stage's
      TFC_RETURN_IF_ERROR(params.markSet(i));
      continue;
    }
    auto ref = params.tensor(i);
    if (!ref.ok()) return std::move(ref).takeStatus();
    const SafetensorsTensorInfo* info = paramInfos[static_cast<size_t>(i)];
    if (const TensorSplit* split = splitOf(artifact.param(i).name)) {
      copySlice(*split, info->shape, tp.size, tpRank, tfc_dtype_size(info->dtype),
                const_cast<uint8_t*>(info->data), ref->data, /*to_slice=*/true);
    } else {
      std::memcpy(ref->data, info->data, ref->byte_size);
    }
    Status status = params.markSet(i);
    if (!status.ok()) return status;
  }
  for (int32_t i = 0; i < artifact.stateCount(); ++i) {
    auto ref = context.state(i);
    if (!ref.ok()) return std::move(ref).takeStatus();
    const SafetensorsTensorInfo* info = stateInfos[static_cast<size_t>(i)];
    if (info == nullptr) continue;  // a state the writer lacked (skipLackingState)
    if (ref->data == nullptr) continue;  // another pipeline stage's
    const TensorSplit* split = splitOf(std::string(kStatePrefix) + artifact.state(i).name);
    if (sharded.count(i) == 0) {
      if (split) {
        copySlice(*split, info->shape, tp.size, tpRank, tfc_dtype_size(info->dtype),
                  const_cast<uint8_t*>(info->data), ref->data, /*to_slice=*/true);
      } else {
        std::memcpy(ref->data, info->data, ref->byte_size);
      }
      continue;
    }
    // ZeRO: elements [rank x block, (rank + 1) x block) of the parameter's shape (with --tp,
    // of this rank's slice of the whole), zero past its end.
    const uint8_t* whole = info->data;
    size_t numel = static_cast<size_t>(elementCount(info->shape));
    std::vector<uint8_t> slice;
    if (split) {
      numel /= static_cast<size_t>(tp.size);
      slice.resize(numel * sizeof(float));
      copySlice(*split, info->shape, tp.size, tpRank, sizeof(float),
                const_cast<uint8_t*>(info->data), slice.data(), /*to_slice=*/true);
      whole = slice.data();
    }
    size_t block = ref->byte_size / sizeof(float);
    size_t first = std::min(numel, static_cast<size_t>(rank) * block);
    size_t count = std::min(block, numel - first);
    std::memset(ref->data, 0, ref->byte_size);
    std::memcpy(ref->data, whole + first * sizeof(float), count * sizeof(float));
  }
  // A GPU context copies them to the device at its next call.
  TFC_RETURN_IF_ERROR(context.upload());
  return metadata;
}

}  // namespace tfc
