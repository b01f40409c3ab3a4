//===- Model.cpp - the model library: registry and configs ----------------===//
#include "compiler/frontend/models/Model.h"

#include "dialects/tfc/AttrNames.h"

#include "llvm/Support/raw_ostream.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace tfc::frontend {

//===----------------------------------------------------------------------===//
// ModelInfo
//===----------------------------------------------------------------------===//

const ModelOption *ModelInfo::findOption(llvm::StringRef key) const {
  for (const ModelOption &option : options)
    if (option.key == key)
      return &option;
  return nullptr;
}

const ModelPreset *ModelInfo::findPreset(llvm::StringRef presetName) const {
  for (const ModelPreset &preset : presets)
    if (preset.name == presetName)
      return &preset;
  return nullptr;
}

std::string ModelInfo::optionList() const {
  std::vector<std::string> keys;
  for (const ModelOption &option : options)
    keys.push_back(option.key);
  return llvm::join(keys, ", ");
}

const std::vector<ModelInfo> &allModels() {
  static const std::vector<ModelInfo> models = {
      gpt2Model(), llamaModel(), mixtralModel(), encdecModel()};
  return models;
}

const ModelInfo *findModel(llvm::StringRef name) {
  for (const ModelInfo &model : allModels())
    if (model.name == name)
      return &model;
  return nullptr;
}

std::string modelList() {
  std::vector<std::string> names;
  for (const ModelInfo &model : allModels())
    names.push_back(model.name);
  return llvm::join(names, ", ");
}

//===----------------------------------------------------------------------===//
// ModelConfig
//===----------------------------------------------------------------------===//

void ModelConfig::require(bool condition, const llvm::Twine &message) const {
  if (!condition)
    throw TraceError(model_->name + ": " + message.str());
}

const ModelOption &ModelConfig::option(llvm::StringRef key) const {
  const ModelOption *option = model_->findOption(key);
  if (!option)
    throw TraceError(model_->name + ": unknown option '" + key.str() +
                     "' (valid: " + model_->optionList() + ")");
  return *option;
}

void ModelConfig::set(llvm::StringRef key, llvm::StringRef value) {
  const ModelOption &opt = option(key);
  auto bad = [&](const char *expected) {
    return TraceError(model_->name + ": bad value '" + value.str() +
                      "' for '" + key.str() + "': expected " + expected);
  };
  switch (opt.kind) {
  case ModelOption::Kind::Size: {
    int64_t v;
    // Sizes end up as tensor dimensions: keep them well inside int32.
    int64_t low = opt.allowZero ? 0 : 1;
    if (value.getAsInteger(10, v) || v < low || v > (int64_t(1) << 31) - 1)
      throw bad(opt.allowZero ? "an integer from 0 to 2147483647"
                                     : "an integer from 1 to 2147483647");
    break;
  }
  case ModelOption::Kind::Number: {
    double v;
    if (value.getAsDouble(v) || !std::isfinite(v))
      throw bad("a finite number");
    break;
  }
  case ModelOption::Kind::Flag:
    if (value != "0" && value != "1" && value != "true" && value != "false")
      throw bad("0, 1, true or false");
    break;
  case ModelOption::Kind::Preset:
    if (!value.empty() && !model_->findPreset(value)) {
      std::vector<std::string> names;
      for (const ModelPreset &preset : model_->presets)
        names.push_back(preset.name);
      throw bad(("one of: " + llvm::join(names, ", ")).c_str());
    }
    break;
  case ModelOption::Kind::Choice:
    if (!llvm::is_contained(opt.choices, value))
      throw bad(("one of: " + llvm::join(opt.choices, ", ")).c_str());
    break;
  }
  values_[key] = value.str();
}

int64_t ModelConfig::size(llvm::StringRef key) const {
  int64_t v = 0;
  llvm::StringRef(text(key)).getAsInteger(10, v);
  return v;
}

double ModelConfig::number(llvm::StringRef key) const {
  double v = 0;
  llvm::StringRef(text(key)).getAsDouble(v);
  return v;
}

bool ModelConfig::flag(llvm::StringRef key) const {
  const std::string &v = text(key);
  return v == "1" || v == "true";
}

const std::string &ModelConfig::text(llvm::StringRef key) const {
  option(key);
  auto it = values_.find(key);
  if (it == values_.end())
    throw TraceError(model_->name + ": option '" + key.str() + "' has no value");
  return it->second;
}

ModelConfig configureModel(const ModelInfo &model,
                           llvm::ArrayRef<std::string> settings) {
  ModelConfig config(model);
  for (const ModelOption &option : model.options)
    config.set(option.key, option.defaultValue);

  // Parse every setting first, so that a preset given last still yields to
  // the user's explicit values.
  std::vector<std::pair<std::string, std::string>> user;
  const ModelPreset *preset = nullptr;
  for (const std::string &setting : settings) {
    auto [key, value] = llvm::StringRef(setting).split('=');
    if (key.empty() || key.size() == setting.size())
      throw TraceError(model.name + ": bad setting '" + setting +
                       "': expected key=value (keys: " + model.optionList() +
                       ")");
    ModelConfig probe(config);
    probe.set(key.trim(), value.trim()); // checks key and value
    const ModelOption *option = model.findOption(key.trim());
    if (option->kind == ModelOption::Kind::Preset)
      preset = model.findPreset(value.trim());
    user.emplace_back(key.trim().str(), value.trim().str());
  }
  if (preset)
    for (const auto &[key, value] : preset->values)
      config.set(key, value);
  for (const auto &[key, value] : user)
    config.set(key, value);

  if (model.validate)
    model.validate(config);
  return config;
}

std::string ModelConfig::toJson() const {
  std::string json;
  llvm::raw_string_ostream os(json);
  auto quoted = [&](llvm::StringRef s) {
    os << '"';
    llvm::printEscapedString(s, os);
    os << '"';
  };
  os << "{\"model\": ";
  quoted(model_->name);
  os << ", \"config\": {";
  bool first = true;
  for (const ModelOption &option : model_->options) {
    auto it = values_.find(option.key);
    if (it == values_.end())
      continue;
    os << (first ? "" : ", ");
    first = false;
    quoted(option.key);
    os << ": ";
    bool numeric = option.kind == ModelOption::Kind::Size ||
                   option.kind == ModelOption::Kind::Number;
    if (numeric)
      os << it->second;
    else
      quoted(it->second);
  }
  os << "}}";
  return json;
}

mlir::OwningOpRef<mlir::ModuleOp> traceModel(mlir::MLIRContext &context,
                                             const ModelInfo &model,
                                             const ModelConfig &config) {
  Graph graph(context);
  model.build(graph, config);
  auto module = graph.finish();
  (*module)->setAttr(attr::kMetadata,
                     mlir::StringAttr::get(&context, config.toJson()));
  return module;
}

} // namespace tfc::frontend
