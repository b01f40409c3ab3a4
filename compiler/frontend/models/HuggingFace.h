//===- HuggingFace.h - models from Hugging Face config.json ------*- C++ -*-===//
//
// `tfc-trace --hf DIR` builds the model a Hugging Face `config.json`
// describes: the architecture picks a model of the library and the config's
// fields become its `--set` values, which the user's own `--set` then
// override (batch, sequence, context, ...). The parameters already carry HF's
// names and layouts, so the checkpoint beside the config loads unchanged.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_COMPILER_FRONTEND_MODELS_HUGGINGFACE_H
#define TFC_COMPILER_FRONTEND_MODELS_HUGGINGFACE_H

#include "compiler/frontend/models/Model.h"

#include <string>
#include <vector>

namespace tfc::frontend {

struct HuggingFaceModel {
  /// The architecture as the config names it ("LlamaForCausalLM").
  std::string architecture;
  const ModelInfo *model = nullptr;
  /// `key=value` settings of `model`, to be applied before the user's.
  std::vector<std::string> settings;
  /// Choices made for the user, worth printing ("n_ctx 4096 of 131072").
  std::vector<std::string> notes;
};

/// Reads `path` (a model directory with config.json, or the config file) and
/// maps it onto the library. Throws TraceError naming the file and the field
/// for unreadable JSON, an unsupported architecture or feature, or a value
/// of the wrong type.
HuggingFaceModel readHuggingFaceConfig(const std::string &path);

/// "GPT2LMHeadModel, LlamaForCausalLM, ...": what readHuggingFaceConfig
/// accepts.
std::string supportedHuggingFaceArchitectures();

} // namespace tfc::frontend

#endif // TFC_COMPILER_FRONTEND_MODELS_HUGGINGFACE_H
