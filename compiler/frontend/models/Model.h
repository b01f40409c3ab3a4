//===- Model.h - the model library: registry and configs --------*- C++ -*-===//
//
// A model is a name, a list of `key=value` options with defaults, a check of
// the whole configuration and a builder that traces the entry functions into
// a Graph. `tfc-trace MODEL --set key=value ...` is a thin main over this.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_COMPILER_FRONTEND_MODELS_MODEL_H
#define TFC_COMPILER_FRONTEND_MODELS_MODEL_H

#include "compiler/frontend/Graph.h"

#include "llvm/ADT/StringMap.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tfc::frontend {

/// One `--set key=value` option of a model.
struct ModelOption {
  enum class Kind {
    Size,   ///< an integer >= 1 (a dimension, a count, a length)
    Number, ///< a finite real number; the model checks its range
    Flag,   ///< 0/1/true/false
    Preset, ///< the name of one of the model's presets
    Choice, ///< one of `choices`
  };
  std::string key;
  Kind kind;
  std::string defaultValue;
  std::string help;
  /// The values a Choice takes.
  std::vector<std::string> choices = {};
  /// A Size that may also be 0 (its help says what 0 means).
  bool allowZero = false;
};

/// Values that `--set preset=NAME` applies; the user's own --set win.
struct ModelPreset {
  std::string name;
  std::string help;
  std::vector<std::pair<std::string, std::string>> values;
};

class ModelInfo;

/// The resolved options of one model: defaults, then the preset, then the
/// user's settings, each parsed and checked for its kind.
class ModelConfig {
public:
  ModelConfig(const ModelInfo &model) : model_(&model) {}

  int64_t size(llvm::StringRef key) const;
  double number(llvm::StringRef key) const;
  bool flag(llvm::StringRef key) const;
  const std::string &text(llvm::StringRef key) const;

  /// Throws TraceError("<model>: <message>") unless `condition` holds.
  void require(bool condition, const llvm::Twine &message) const;

  const ModelInfo &model() const { return *model_; }
  /// Parses and sets one value; throws for an unknown key or a bad value.
  void set(llvm::StringRef key, llvm::StringRef value);

  /// {"model": "gpt2", "config": {"n_layer": 2, ...}}: recorded in the
  /// module (`tfc.metadata`) and carried into the artifact, so that tools
  /// such as `tfc-run generate` know the model without guessing.
  std::string toJson() const;

private:
  const ModelOption &option(llvm::StringRef key) const;
  const ModelInfo *model_;
  llvm::StringMap<std::string> values_;
};

class ModelInfo {
public:
  std::string name;
  std::string summary;
  std::vector<ModelOption> options;
  std::vector<ModelPreset> presets;
  /// Checks the configuration as a whole (divisibility, lengths that fit the
  /// context) with messages that name the keys; throws TraceError.
  std::function<void(const ModelConfig &)> validate;
  /// Traces every entry function of the model into `graph`.
  std::function<void(Graph &, const ModelConfig &)> build;

  const ModelOption *findOption(llvm::StringRef key) const;
  const ModelPreset *findPreset(llvm::StringRef name) const;
  /// "n_layer, n_head, ..." for error messages.
  std::string optionList() const;
};

/// The most layers a model may have: tracing is linear in them, and a
/// mistyped count (2^31) would trace for hours; no checkpoint comes near it.
constexpr int64_t kMaxLayers = 1024;
/// The most experts an MoE layer may have: tracing is linear in n_layer x
/// n_expert (three weights an expert), and a million experts ran the tracer
/// out of memory (fuzz/hf-config-mutate.test); the largest released MoE
/// checkpoints route over a few hundred.
constexpr int64_t kMaxExperts = 1024;

/// Every model of the library, in a fixed order.
const std::vector<ModelInfo> &allModels();
/// nullptr when no model has that name.
const ModelInfo *findModel(llvm::StringRef name);
/// "gpt2, llama, encdec".
std::string modelList();

/// Resolves `settings` ("key=value" strings) over the model's defaults and
/// preset, then validates the whole configuration. Throws TraceError.
ModelConfig configureModel(const ModelInfo &model,
                           llvm::ArrayRef<std::string> settings);

/// Traces the model into a verified module. Throws TraceError.
mlir::OwningOpRef<mlir::ModuleOp> traceModel(mlir::MLIRContext &context,
                                             const ModelInfo &model,
                                             const ModelConfig &config);

// The models (one file each under models/).
ModelInfo gpt2Model();
ModelInfo llamaModel();
ModelInfo mixtralModel();
ModelInfo encdecModel();

} // namespace tfc::frontend

#endif // TFC_COMPILER_FRONTEND_MODELS_MODEL_H
