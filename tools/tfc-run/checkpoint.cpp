#include "checkpoint.hpp"

#include <set>
#include <vector>

#include "print.hpp"

#include "tfc/runtime/safetensors.hpp"

namespace tfc::run {

Status loadParameters(const std::string& path, const Artifact& artifact, Params& params,
                      bool allowUnexpected) {
  auto file = SafetensorsFile::open(path);
  if (!file.ok()) return std::move(file).takeStatus();
  const auto& metadata = file->metadata();
  auto format = metadata.find("format");
  bool checkpoint = format != metadata.end() && format->second == kCheckpointFormat;
  if (checkpoint) {
    Status sameModel = checkCheckpointModel(path, metadata, artifact,
                                      "use it with the model that wrote it");
    if (!sameModel.ok()) return sameModel;
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
  tfc_params_load_options_t options;
  tfc_params_load_options_initialize(&options);
  options.allow_unexpected = allowUnexpected || unexpected.empty();
  if (!options.allow_unexpected && stateTensors > 0) {
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
  Status status = params.loadSafetensors(path, &options);
  if (!status.ok()) {
    // The runtime names each tensor (with the closest parameter name); say how to go on.
    if (!unexpected.empty())
      return Status::error(status.code(), "%s (--allow-unexpected ignores tensors that are "
                           "not parameters)", status.message());
    return status;
  }
  if (stateTensors > 0) {
    print(stderr,
          "tfc-run: {} is a training checkpoint: taking its {} parameters, ignoring its {} state "
          "tensors (optimizer moments, step)\n",
          path, artifact.paramCount(), stateTensors);
  }
  if (!unexpected.empty()) {
    print(stderr, "tfc-run: {}: ignoring {} tensors that are not parameters\n", path,
          unexpected.size());
  }
  return Status();
}

}  // namespace tfc::run
