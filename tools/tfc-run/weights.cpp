#include "weights.hpp"

#include <utility>
#include <vector>

#include "print.hpp"

namespace tfc::run {

WeightsLoadOptions inferenceWeightsOptions(const Args& args) {
  WeightsLoadOptions options;
  options.allowUnexpected = args.has("--allow-unexpected");
  if (args.has("--mmap")) options.memory = WeightsMemory::kMapped;
  return options;
}

WeightsLoadOptions trainingWeightsOptions() {
  WeightsLoadOptions options;
  options.acceptCheckpoint = false;
  return options;
}

Status loadWeightsNoting(const std::string& path, Params& params,
                         const WeightsLoadOptions& options) {
  auto notes = loadWeights(path, params, options);
  if (!notes.ok()) return std::move(notes).takeStatus();
  for (const std::string& note : *notes) print(stderr, "{}: {}\n", programName(), note);
  return Status();
}

StatusOr<Context> openInferenceContext(const Artifact& artifact, const std::string& weights,
                                       const WeightsLoadOptions& options, int64_t threads,
                                       int32_t device) {
  TFC_ASSIGN_OR_RETURN(Params params, Params::create(artifact));
  if (!weights.empty()) TFC_RETURN_IF_ERROR(loadWeightsNoting(weights, params, options));
  tfc_context_options_t contextOptions;
  tfc_context_options_initialize(&contextOptions);
  contextOptions.num_threads = static_cast<int32_t>(threads);
  contextOptions.device = device;
  return Context::create(artifact, params, &contextOptions);
}

}  // namespace tfc::run
