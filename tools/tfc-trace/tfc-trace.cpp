//===- tfc-trace.cpp - trace a model of the library into tfc IR -----------===//
//
//   tfc-trace gpt2 --set n_layer=4 -o gpt2.mlir
//   tfc-trace --hf path/to/hf-model --set batch=1 -o model.mlir
//
// Builds the model's entry functions with the C++ tracing frontend and writes
// the verified module as MLIR text, exactly as tfc-opt prints it. Errors
// (unknown model or option, bad value, inconsistent sizes) print one line and
// exit 1 without touching the output file.
//
//===----------------------------------------------------------------------===//
#include "compiler/frontend/models/HuggingFace.h"
#include "compiler/frontend/models/Model.h"
#include "support/FileIdentity.h"
#include "support/OutputFile.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

using namespace tfc::frontend;
namespace cl = llvm::cl;

static cl::OptionCategory traceCategory("tfc-trace options");

static cl::opt<std::string> modelName(cl::Positional, cl::desc("MODEL"),
                                      cl::cat(traceCategory));
static cl::list<std::string>
    settings("set", cl::desc("Set a model option (repeatable)"),
             cl::value_desc("key=value"), cl::cat(traceCategory));
static cl::opt<std::string> outputFile("o",
                                       cl::desc("Output file ('-': stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(traceCategory));
static cl::opt<std::string> hfPath(
    "hf",
    cl::desc("Build the model a Hugging Face config.json describes (a model "
             "directory or the file); --set overrides its values"),
    cl::value_desc("dir"), cl::cat(traceCategory));
static cl::opt<bool> listModels("list-models",
                                cl::desc("List the models and exit"),
                                cl::cat(traceCategory));
static cl::opt<std::string>
    listOptions("list-options",
                cl::desc("List a model's options with defaults and exit"),
                cl::value_desc("model"), cl::cat(traceCategory));

static int error(const llvm::Twine &message) {
  llvm::errs() << "tfc-trace: error: " << message << "\n";
  return 1;
}

/// An empty path: a usage error, exit 2, as tfc-run's.
static int usageError(const llvm::Twine &message) {
  llvm::errs() << "tfc-trace: error: " << message << "\n";
  return 2;
}

/// Files of a model folder that `tfc-run --weights/--tokenizer DIR` reads:
/// an output written over one would destroy the model it was traced from.
static bool isModelFolderFile(llvm::StringRef name) {
  return name.ends_with(".safetensors") || name.ends_with(".json") ||
         name.ends_with(".bin") || name.ends_with(".model") ||
         name == "merges.txt";
}

/// The output rule of support/FileIdentity.h: -o is neither the config it
/// reads nor a file of the model folder beside it.
static std::optional<std::string> outputCollision() {
  if (hfPath.empty() || outputFile == "-")
    return std::nullopt;
  std::string config = hfPath;
  std::string folder = llvm::sys::path::parent_path(hfPath).str();
  if (llvm::sys::fs::is_directory(hfPath)) {
    llvm::SmallString<256> joined(hfPath);
    llvm::sys::path::append(joined, "config.json");
    config = joined.str().str();
    folder = hfPath;
  }
  if (llvm::Error err = tfc::checkDistinctFiles({{"--hf", config}},
                                                {{"-o", outputFile}}))
    return llvm::toString(std::move(err));
  if (tfc::isDirectlyInside(outputFile, folder.empty() ? "." : folder) &&
      isModelFolderFile(llvm::sys::path::filename(outputFile)) &&
      llvm::sys::fs::exists(outputFile))
    return "-o '" + outputFile + "' is a file of the model folder '" +
           (folder.empty() ? std::string(".") : folder) +
           "' (its checkpoint, config or tokenizer): writing it would "
           "destroy it; give another path";
  return std::nullopt;
}

static std::string kindHint(const ModelOption &option) {
  switch (option.kind) {
  case ModelOption::Kind::Size:
    return option.allowZero ? "integer >= 0" : "integer >= 1";
  case ModelOption::Kind::Number:
    return "number";
  case ModelOption::Kind::Flag:
    return "0 or 1";
  case ModelOption::Kind::Preset:
    return "preset name";
  case ModelOption::Kind::Choice:
    return llvm::join(option.choices, " | ");
  }
  return "";
}

/// The model's options, defaults and presets, as --help and --list-options
/// print them.
static void describeModel(const ModelInfo &model, llvm::raw_ostream &os) {
  os << model.name << ": " << model.summary << "\n";
  for (const ModelOption &option : model.options) {
    std::string lhs = "  " + option.key + "=" + option.defaultValue;
    os << lhs;
    os.indent(lhs.size() < 26 ? 26 - lhs.size() : 1);
    os << option.help << " (" << kindHint(option) << ")\n";
  }
  for (const ModelPreset &preset : model.presets) {
    std::vector<std::string> values;
    for (const auto &[key, value] : preset.values)
      values.push_back(key + "=" + value);
    os << "  preset " << preset.name << ": " << preset.help << "\n    "
       << llvm::join(values, " ") << "\n";
  }
}

static std::string helpText() {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "trace a model of the tfc library into tfc IR\n\n"
     << "Builds the model's entry functions (forward, loss; prefill, decode and\n"
     << "sample for decoder-only models) and writes the verified module as MLIR\n"
     << "text. Parameters carry the names real checkpoints use. Every size has\n"
     << "a small default that traces, compiles and runs in seconds.\n\n"
     << "Models and their options (--set key=value; shown with defaults):\n\n";
  for (const ModelInfo &model : allModels()) {
    describeModel(model, os);
    os << "\n";
  }
  os << "Hugging Face models (--hf DIR): " << supportedHuggingFaceArchitectures()
     << ";\nthe config's fields set the options above, --set overrides them "
        "(batch, seq,\nn_ctx, ...), and `tfc-run --weights DIR` loads the "
        "checkpoint beside it.\n\n";
  os << "Examples:\n"
     << "  tfc-trace gpt2 -o gpt2.mlir\n"
     << "  tfc-trace gpt2 --set preset=gpt2-124m --set batch=1 -o gpt2-124m.mlir\n"
     << "  tfc-trace llama --set n_head=8 --set n_kv_head=2 | tfc-opt --tfc-summary\n"
     << "  tfc-trace encdec --mlir-print-debuginfo   (locations name the layer)\n"
     << "  tfc-trace --hf ./TinyLlama --set batch=1 --set n_ctx=512 -o tl.mlir\n";
  return text;
}

/// Writes `text` to `path` by tfc's output rule (support/OutputFile.h): never
/// half-written, never a device replaced by a file.
static bool writeTraceOutput(llvm::StringRef path, llvm::StringRef text,
                            std::string &message) {
  if (llvm::Error err = tfc::writeOutput(path, [&](llvm::raw_ostream &os) {
        os << text;
        return llvm::Error::success();
      })) {
    message = "cannot write '" + path.str() + "': " + llvm::toString(std::move(err));
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  cl::HideUnrelatedOptions(traceCategory);
  std::string overview = helpText();
  cl::extrahelp note(
      "\nThe printing options of tfc-opt work too, e.g. --mlir-print-debuginfo "
      "(see --help-hidden).\n");
  cl::ParseCommandLineOptions(argc, argv, overview);

  if (listModels) {
    for (const ModelInfo &model : allModels())
      llvm::outs() << model.name << ": " << model.summary << "\n";
    return 0;
  }
  if (!listOptions.empty()) {
    const ModelInfo *model = findModel(listOptions);
    if (!model)
      return error("unknown model '" + listOptions + "' (known: " +
                   modelList() + ")");
    describeModel(*model, llvm::outs());
    return 0;
  }
  if (outputFile.empty())
    return usageError("-o '': give an output file ('-' for standard output)");
  if (hfPath.getNumOccurrences() && hfPath.empty())
    return usageError("--hf '': give a model folder or its config.json");
  if (std::optional<std::string> collision = outputCollision())
    return error(*collision);
  std::vector<std::string> allSettings;
  const ModelInfo *model = nullptr;
  if (!hfPath.empty()) {
    if (!modelName.empty())
      return error("give either a MODEL or --hf, not both");
    try {
      HuggingFaceModel hf = readHuggingFaceConfig(hfPath);
      model = hf.model;
      allSettings = hf.settings;
      for (const std::string &note : hf.notes)
        llvm::errs() << "tfc-trace: note: " << note << "\n";
    } catch (const TraceError &e) {
      return error(e.what());
    }
  } else {
    if (modelName.empty())
      return error("no model given (known: " + modelList() +
                   "; or --hf DIR); see tfc-trace --help");
    model = findModel(modelName);
    if (!model)
      return error("unknown model '" + modelName + "' (known: " +
                   modelList() + ")");
  }
  // The user's settings come last, so they override the config's.
  allSettings.insert(allSettings.end(), settings.begin(), settings.end());

  std::string text;
  try {
    ModelConfig config = configureModel(*model, allSettings);
    mlir::MLIRContext context;
    loadDialects(context);
    mlir::OwningOpRef<mlir::ModuleOp> module =
        traceModel(context, *model, config);
    // Print exactly as tfc-opt does, so that its output round-trips.
    llvm::raw_string_ostream os(text);
    module->print(os, mlir::OpPrintingFlags());
    os << "\n";
  } catch (const TraceError &e) {
    return error(e.what());
  } catch (const std::exception &e) {
    return error(llvm::Twine("internal error while tracing '") + model->name +
                 "': " + e.what());
  }

  if (outputFile == "-") {
    llvm::outs() << text;
    llvm::outs().flush();
    return 0;
  }
  std::string message;
  if (!writeTraceOutput(outputFile, text, message))
    return error(message);
  return 0;
}
