//===- Driver.cpp - the `tfc` command -------------------------------------===//
//
// tfc IN.mlir [-o OUT] [--emit=mlir|so] [--compile-to=PHASE] [-O0..3]
//             [--dump-ir=DIR] [--summary] [standard MLIR printing flags]
//
// Reads a tfc module, runs the pipeline of Pipeline.h and writes the result.
// Diagnostics carry file:line:col; the output is written atomically, so a
// failed compile never leaves a half-written file.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"

#include "compiler/IRDumper.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

namespace tfc {

namespace {

enum class Emit { Mlir, So };

struct Options {
  cl::OptionCategory category{"tfc options"};
  cl::opt<std::string> input{cl::Positional, cl::desc("<input.mlir>"),
                             cl::init("-"), cl::cat(category)};
  cl::opt<std::string> output{"o", cl::desc("Output file ('-' for stdout)"),
                              cl::value_desc("file"), cl::init(""),
                              cl::cat(category)};
  cl::opt<std::string> emit{
      "emit",
      cl::desc("What to write: mlir (the IR after the last phase) or so (a "
               "shared object). Default: from the output's extension, else "
               "mlir"),
      cl::value_desc("mlir|so"), cl::init(""), cl::cat(category)};
  cl::opt<std::string> compileTo{
      "compile-to",
      cl::desc("Stop after this phase and write its IR (see the phases below)"),
      cl::value_desc("phase"), cl::init(""), cl::cat(category)};
  cl::opt<unsigned> optLevel{"O", cl::Prefix,
                             cl::desc("Optimization level 0-3 (default 2)"),
                             cl::init(2), cl::cat(category)};
  cl::opt<std::string> dumpIR{
      "dump-ir",
      cl::desc("Write the IR before the pipeline and after every pass to DIR "
               "as 00-input.mlir, 01-<pass>.mlir, ..."),
      cl::value_desc("DIR"), cl::init(""), cl::cat(category)};
  cl::opt<bool> summary{
      "summary",
      cl::desc("Print a summary of the compiled module (parameters, state, "
               "entries) to stdout"),
      cl::init(false), cl::cat(category)};
};

int fail(const llvm::Twine &message) {
  llvm::errs() << "tfc: error: " << message << "\n";
  return 1;
}

} // namespace

int compilerMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  Options options;
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  registerPasses();

  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "tfc " << TFC_VERSION << " (LLVM/MLIR " << LLVM_VERSION_STRING << ")\n";
  });
  cl::AddExtraVersionPrinter(nullptr);
  std::string overview;
  {
    llvm::raw_string_ostream os(overview);
    os << "tfc: ahead-of-time compiler for transformer models\n\n"
          "  tfc model.mlir -o model.opt.mlir --summary\n"
          "  tfc model.mlir --compile-to=input --dump-ir=ir/\n\n";
    describePipeline(os);
  }
  // libLLVM registers hundreds of backend flags; --help shows tfc's own and
  // the standard MLIR ones (--mlir-print-ir-after-all, --mlir-timing, ...).
  static cl::OptionCategory mlirCategory("MLIR printing, timing and debugging");
  for (auto &entry : cl::getRegisteredOptions()) {
    llvm::StringRef name = entry.getKey();
    if (name.starts_with("mlir-") || name == "pass-pipeline-crash-reproducer")
      entry.getValue()->addCategory(mlirCategory);
  }
  cl::HideUnrelatedOptions({&options.category, &mlirCategory});
  cl::ParseCommandLineOptions(argc, argv, overview);

  // Resolve what to produce before doing any work.
  Emit emit = Emit::Mlir;
  std::string emitName = options.emit;
  if (emitName.empty())
    emitName = llvm::StringRef(options.output).ends_with(".so") ? "so" : "mlir";
  if (emitName == "so")
    emit = Emit::So;
  else if (emitName != "mlir")
    return fail("unknown --emit='" + emitName + "' (expected mlir or so)");
  if (emit == Emit::So)
    return fail("--emit=so: CPU/CUDA code generation is not in this build of "
                "tfc yet; use --emit=mlir (or an output ending in .mlir)");
  if (options.optLevel > 3)
    return fail("-O" + llvm::Twine(options.optLevel.getValue()) +
                ": the optimization level must be 0, 1, 2 or 3");

  PipelineOptions pipeline;
  pipeline.optLevel = options.optLevel;
  pipeline.compileTo = lastPhase();
  if (!options.compileTo.empty()) {
    auto phase = parsePhase(options.compileTo);
    if (!phase)
      return fail("unknown --compile-to='" + options.compileTo +
                  "' (phases: " + listPhases() + ")");
    pipeline.compileTo = *phase;
  }

  mlir::DialectRegistry registry;
  registerDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string errorMessage;
  auto file = mlir::openInputFile(options.input, &errorMessage);
  if (!file)
    return fail(errorMessage);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1; // The parser or verifier has reported file:line:col.
  bool hasEntry = false;
  for (auto func : module->getOps<mlir::func::FuncOp>())
    hasEntry |= func.isPublic() && !func.isExternal();
  if (!hasEntry)
    return fail("'" + options.input +
                "' has no entry function (a public func.func with a body)");

  if (!options.dumpIR.empty())
    if (llvm::Error err = startIRDump(options.dumpIR, *module))
      return fail("--dump-ir: " + llvm::toString(std::move(err)));

  mlir::PassManager pm(&context);
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return 1;
  mlir::applyDefaultTimingPassManagerCLOptions(pm);
  if (!options.dumpIR.empty())
    pm.addInstrumentation(createIRDumpInstrumentation(options.dumpIR));
  buildPipeline(pm, pipeline);
  if (mlir::failed(pm.run(*module)))
    return 1;

  if (options.summary)
    printModuleSummary(*module, llvm::outs());

  std::string out = options.output;
  if (out.empty())
    out = options.summary ? "" : "-";
  if (!out.empty()) {
    if (llvm::Error err = llvm::writeToOutput(out, [&](llvm::raw_ostream &os) {
          module->print(os);
          os << "\n";
          return llvm::Error::success();
        }))
      return fail("cannot write '" + out + "': " +
                  llvm::toString(std::move(err)));
  }
  return 0;
}

} // namespace tfc
