#include "tfc/runtime/weights.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cctype>
#include <map>
#include <set>
#include <utility>

#include "tfc/runtime/checkpoint.hpp"
#include "tfc/runtime/safetensors.hpp"

namespace tfc {

namespace {

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// A single file refused for its names or dtypes may be a Hugging Face checkpoint, which
// loads from its directory: say so.
Status withPretrainedHint(Status status) {
  if (status.ok()) return status;
  std::string message = status.message();
  if (message.find(" has dtype ") == std::string::npos &&
      message.find("missing parameter ") == std::string::npos) {
    return status;
  }
  return Status::error(status.code(), "%s\n(a Hugging Face checkpoint? pass its directory as "
                       "--weights: dtypes then convert, a prefix such as 'transformer.' is "
                       "dropped and buffers are skipped)", message.c_str());
}

// Params::loadPretrained, with a note for the tensors skipped (how many, the first few
// names) and one for the dtype conversions ("converted 147 tensors bf16 -> f32").
StatusOr<std::vector<std::string>> loadPretrainedWeights(const std::string& path,
                                                         Params& params, WeightsMemory memory) {
  auto tensors = params.loadPretrained(path, memory == WeightsMemory::kCopied);
  if (!tensors.ok()) return std::move(tensors).takeStatus();
  Artifact artifact = Artifact::share(tfc_params_artifact(params.get()));
  std::vector<std::string> skipped;
  std::map<std::pair<tfc_dtype_t, tfc_dtype_t>, size_t> conversions;
  for (const PretrainedTensor& tensor : *tensors) {
    if (tensor.paramIndex < 0) {
      skipped.push_back(tensor.name);
      continue;
    }
    auto to = static_cast<tfc_dtype_t>(artifact.param(tensor.paramIndex).dtype);
    if (tensor.dtype != to) ++conversions[{tensor.dtype, to}];
  }
  std::vector<std::string> notes;
  if (!skipped.empty()) {
    constexpr size_t kNamesShown = 4;
    std::string names;
    for (size_t i = 0; i < skipped.size() && i < kNamesShown; ++i) {
      names += (i > 0 ? ", '" : "'") + skipped[i] + "'";
    }
    if (skipped.size() > kNamesShown) {
      names += ", ... (" + std::to_string(skipped.size() - kNamesShown) + " more)";
    }
    notes.push_back(fmt::format("note: {}: skipped {} {} of the model: {}", path, skipped.size(),
                                skipped.size() == 1 ? "tensor that is not a parameter"
                                                    : "tensors that are not parameters",
                                names));
  }
  if (!conversions.empty()) {
    std::string text;
    for (const auto& [dtypes, count] : conversions) {
      text += (text.empty() ? "" : ", ") + std::to_string(count) + " tensor" +
              (count == 1 ? "" : "s") + " " + lowercase(tfc_dtype_name(dtypes.first)) + " -> " +
              lowercase(tfc_dtype_name(dtypes.second));
    }
    notes.push_back(fmt::format("note: {}: converted {}", path, text));
  }
  return notes;
}

}  // namespace

bool isPretrainedCheckpoint(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) return true;
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
}

StatusOr<std::vector<std::string>> loadWeights(const std::string& path, Params& params,
                                               const WeightsLoadOptions& options) {
  if (isPretrainedCheckpoint(path)) return loadPretrainedWeights(path, params, options.memory);
  tfc_params_load_options_t loadOptions;
  tfc_params_load_options_initialize(&loadOptions);
  loadOptions.copy = options.memory == WeightsMemory::kCopied;
  if (!options.acceptCheckpoint && !options.allowUnexpected) {
    // Strict: the runtime names every tensor that is not a parameter.
    TFC_RETURN_IF_ERROR(withPretrainedHint(params.loadSafetensors(path, &loadOptions)));
    return std::vector<std::string>();
  }

  Artifact artifact = Artifact::share(tfc_params_artifact(params.get()));
  auto file = SafetensorsFile::open(path);
  if (!file.ok()) return std::move(file).takeStatus();
  const auto& metadata = file->metadata();
  auto format = metadata.find("format");
  bool checkpoint = options.acceptCheckpoint && format != metadata.end() &&
                    format->second == kCheckpointFormat;
  if (checkpoint) {
    TFC_RETURN_IF_ERROR(
        checkCheckpointModel(path, metadata, artifact, "use it with the model that wrote it"));
  }
  std::set<std::string> names;
  for (int32_t i = 0; i < artifact.paramCount(); ++i) names.insert(artifact.param(i).name);
  size_t stateTensors = 0;
  std::vector<std::string> unexpected;
  for (const SafetensorsTensorInfo& info : file->tensors()) {
    if (names.count(info.name)) continue;
    if (checkpoint && info.name.rfind(kStatePrefix, 0) == 0) {
      ++stateTensors;
    } else {
      unexpected.push_back(info.name);
    }
  }
  loadOptions.allow_unexpected = options.allowUnexpected || unexpected.empty();
  if (!loadOptions.allow_unexpected && stateTensors > 0) {
    // The runtime would list the skipped state tensors too: name only the others.
    std::string list;
    for (size_t i = 0; i < unexpected.size() && i < 5; ++i)
      list += (i ? ", '" : "'") + unexpected[i] + "'";
    if (unexpected.size() > 5) list += ", and " + std::to_string(unexpected.size() - 5) + " more";
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: %zu tensor%s that %s not parameters of this model: %s "
                         "(--allow-unexpected ignores them)",
                         path.c_str(), unexpected.size(), unexpected.size() == 1 ? "" : "s",
                         unexpected.size() == 1 ? "is" : "are", list.c_str());
  }
  Status status = params.loadSafetensors(path, &loadOptions);
  if (!status.ok()) {
    // The runtime names each tensor (with the closest parameter name); say how to go on.
    if (!unexpected.empty())
      status = Status::error(status.code(), "%s (--allow-unexpected ignores tensors that are "
                             "not parameters)", status.message());
    return withPretrainedHint(std::move(status));
  }
  std::vector<std::string> notes;
  if (stateTensors > 0) {
    notes.push_back(fmt::format(
        "{} is a training checkpoint: taking its {} parameters, ignoring its {} state tensors "
        "(optimizer moments, step)",
        path, artifact.paramCount(), stateTensors));
  }
  if (!unexpected.empty()) {
    notes.push_back(fmt::format("{}: ignoring {} tensors that are not parameters", path,
                                unexpected.size()));
  }
  return notes;
}

}  // namespace tfc
