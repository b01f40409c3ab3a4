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

#include "codegen/artifact/ArtifactWriter.h"
#include "compiler/IRDumper.h"
#include "compiler/ParseGuard.h"
#include "compiler/Pipeline.h"
#include "support/FileIdentity.h"
#include "support/OutputFile.h"
#include "compiler/Registration.h"
#include "compiler/Report.h"
#include "dialects/tfc/AttrNames.h"
#include "dialects/tfc/TfcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Support/raw_ostream.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace cl = llvm::cl;

namespace tfc {

namespace {

enum class Emit { Mlir, Llvm, Asm, Obj, So };

struct Options {
  cl::OptionCategory category{"tfc options"};
  cl::opt<std::string> input{
      cl::Positional,
      cl::desc("<input.mlir> (MLIR text or bytecode; '-' or none: standard "
               "input, as for mlir-opt, with a note when it is a terminal)"),
      cl::init("-"), cl::cat(category)};
  cl::opt<std::string> output{"o", cl::desc("Output file ('-' for stdout)"),
                              cl::value_desc("file"), cl::init(""),
                              cl::cat(category)};
  cl::opt<std::string> emit{
      "emit",
      cl::desc("What to write: mlir (the IR after --compile-to), llvm (LLVM "
               "IR), asm, obj, so (the artifact). Default: from the output's "
               "extension (.so, .o, .s, .ll), else mlir"),
      cl::value_desc("mlir|llvm|asm|obj|so"), cl::init(""), cl::cat(category)};
  cl::opt<std::string> compileTo{
      "compile-to",
      cl::desc("With --emit=mlir: stop after this phase (default: kernels, "
               "the planned program)"),
      cl::value_desc("phase"), cl::init(""), cl::cat(category)};
  cl::opt<unsigned> optLevel{"O", cl::Prefix,
                             cl::desc("Optimization level 0-3 (default 2)"),
                             cl::init(2), cl::cat(category)};
  cl::opt<std::string> target{
      "target",
      cl::desc("What the kernels run on: cpu (default). See the list of "
               "targets below"),
      cl::value_desc("name"), cl::init("cpu"), cl::cat(category)};
  cl::opt<std::string> cudaArch{
      "cuda-arch",
      cl::desc("With --target=cuda: the GPU architecture kernels are compiled "
               "for (default sm_90; sm_80, sm_86, sm_89, sm_90a, ...)"),
      cl::value_desc("sm_NN"), cl::init("sm_90"), cl::cat(category)};
  cl::opt<bool> cudaTf32{
      "cuda-tf32",
      cl::desc("With --target=cuda: run f32 matmul and linear on tensor "
               "cores through TF32 (each operand rounded to 10 bits of "
               "mantissa, sums in f32; PyTorch's allow_tf32). Off by "
               "default: f32 products are exact"),
      cl::init(false), cl::cat(category)};
  cl::opt<std::string> cpu{
      "cpu",
      cl::desc("CPU the kernels are compiled for: native (default), "
               "x86-64-v3, x86-64-v4, or any 64-bit LLVM CPU name "
               "(--cpu=help lists them)"),
      cl::value_desc("name"), cl::init("native"), cl::cat(category)};
  cl::opt<int64_t> parallelMinWork{
      "parallel-min-work",
      cl::desc("CPU: the least work (loop-body operations over all "
               "iterations) of a generated loop that runs on the runtime's "
               "threads (default 65536; 0: every parallel loop, as tests "
               "do; -1: none)"),
      cl::value_desc("ops"), cl::init(int64_t{1} << 16), cl::cat(category)};
  cl::opt<std::string> dumpIR{
      "dump-ir",
      cl::desc("Write the IR before the pipeline and after every pass to DIR "
               "as 00-input.mlir, 01-<pass>.mlir, ...; with an artifact also "
               "the LLVM IR as NN-llvm.ll"),
      cl::value_desc("DIR"), cl::init(""), cl::cat(category)};
  cl::opt<std::string> optimizer{
      "optimizer",
      cl::desc("Also build the training entries from `loss`: loss_grad and "
               "train_step with this optimizer (adamw or sgd)"),
      cl::value_desc("adamw|sgd"), cl::init(""), cl::cat(category)};
  cl::opt<int64_t> dataParallel{
      "dp",
      cl::desc("With --optimizer: data parallel over N processes (mpirun -np "
               "N tfc-run model.so train ...): the gradients are averaged "
               "over the ranks (tfc-data-parallel); each rank reads its slice "
               "of a global batch of N x the compiled batch"),
      cl::value_desc("N"), cl::init(0), cl::cat(category)};
  cl::opt<int64_t> zero{
      "zero",
      cl::desc("With --dp and --optimizer: ZeRO stage (0 or 1). 1: the "
               "gradients are reduce-scattered, each rank updates its block "
               "of every parameter with its block of the optimizer's moments "
               "(optimizer state / N per rank) and the parameters are "
               "all-gathered (tfc-zero-shard)"),
      cl::value_desc("0|1"), cl::init(0), cl::cat(category)};
  cl::opt<int64_t> tensorParallel{
      "tp",
      cl::desc("Tensor parallel over M processes (mpirun -np M tfc-run "
               "model.so train ...), as Megatron-LM: each rank holds 1/M of "
               "every layer's heads and MLP columns (tfc-tensor-parallel); "
               "gpt2 and llama models, f32. With --dp=N: N x M processes, "
               "rank d x M + t holding slice t of data-parallel replica d"),
      cl::value_desc("M"), cl::init(0), cl::cat(category)};
  cl::opt<int64_t> microbatches{
      "microbatches",
      cl::desc("With --optimizer: gradient accumulation over M micro-batches "
               "(tfc-microbatch). The model as traced is one micro-batch; a "
               "train_step takes M of them (M x the traced batch, each "
               "input's first dimension) and makes one optimizer update, "
               "keeping the activations of one micro-batch at a time "
               "(default 1)"),
      cl::value_desc("M"), cl::init(1), cl::cat(category)};
  cl::opt<int64_t> pipelineParallel{
      "pp",
      cl::desc("With --optimizer: pipeline parallel over S processes "
               "(mpirun -np S tfc-run model.so train ...): the model is cut "
               "between blocks into S stages of about equal FLOPs "
               "(tfc-pipeline-stages), stage s runs on rank s and sends its "
               "activations forward and their gradients back "
               "(tfc-pipeline-split); with --microbatches=M the stages work "
               "on different micro-batches at once (bubble (S-1)/(M+S-1)). "
               "With --tp=M each stage's layers are split over M processes "
               "and with --dp=N there are N replicas: N x S x M processes, rank "
               "(d x S + s) x M + t holding slice t of stage s of replica d"),
      cl::value_desc("S"), cl::init(0), cl::cat(category)};
  cl::opt<int64_t> expertParallel{
      "ep",
      cl::desc("With --optimizer, for mixture-of-experts models (mixtral): "
               "expert parallel over N processes (mpirun -np N tfc-run "
               "model.so train ...): each rank reads its slice of a global "
               "batch of N x the compiled batch, as with --dp=N, and holds "
               "E/N of every layer's experts, computing them on every rank's "
               "tokens (all-gathered, the outputs reduce-scattered back; "
               "tfc-expert-parallel). CPU, f32; not yet with --dp, --tp, "
               "--pp or --zero"),
      cl::value_desc("N"), cl::init(0), cl::cat(category)};
  cl::opt<std::string> mesh{
      "mesh",
      cl::desc("The process mesh in one flag: dp=N,pp=S,tp=M (any of them, "
               "in any order, each 1 or more), the same as --dp=N --pp=S "
               "--tp=M: N x S x M processes, world rank (d x S + s) x M + t; "
               "or ep=N, the same as --ep=N"),
      cl::value_desc("dp=N,pp=S,tp=M"), cl::cat(category)};
  cl::opt<std::string> ppSchedule{
      "pp-schedule",
      cl::desc("With --pp: each stage's order of micro-batches: 1f1b "
               "(default; PipeDream-Flush: at most S micro-batches' "
               "activations alive on a stage) or gpipe (all forwards, then "
               "all backwards: M micro-batches' activations)"),
      cl::value_desc("1f1b|gpipe"), cl::init("1f1b"), cl::cat(category)};
  cl::opt<double> dpBucketMb{
      "dp-bucket-mb",
      cl::desc("With --dp: all-reduce the gradients in buckets of this many "
               "MB (default 25, as PyTorch DDP), each started as soon as its "
               "gradients are final, overlapping the rest of the backward; 0: "
               "one collective per gradient; -1: one blocking all-reduce "
               "per gradient"),
      cl::value_desc("MB"), cl::init(25.0), cl::cat(category)};
  cl::opt<bool> dpOverlap{
      "dp-overlap",
      cl::desc("With --dp and buckets: wait for each bucket at the end of the "
               "backward (default true); false: right after its start, a "
               "blocking baseline"),
      cl::init(true), cl::cat(category)};
  cl::opt<std::string> precision{
      "precision",
      cl::desc("f32 (default), bf16 or f16. Without --optimizer: store "
               "parameters and the KV cache in this type and compute in it "
               "(accumulating in f32). With --optimizer: mixed-precision "
               "training (matmuls and attention in it, the rest and the "
               "master weights f32; f16 with dynamic loss scaling)"),
      cl::value_desc("f32|bf16|f16"), cl::init("f32"), cl::cat(category)};
  cl::opt<double> lossScale{
      "loss-scale",
      cl::desc("With --precision=f16 --optimizer: the initial dynamic loss "
               "scale (default 65536, as torch.cuda.amp.GradScaler)"),
      cl::value_desc("S"), cl::init(65536.0), cl::cat(category)};
  cl::list<std::string> noDecay{
      "no-decay",
      cl::desc("With --optimizer: parameters (names or prefix*) that get no "
               "weight decay; by default matrices decay, biases and norms not"),
      cl::value_desc("name"), cl::CommaSeparated, cl::cat(category)};
  cl::opt<bool> noFuse{
      "no-fuse",
      cl::desc("Do not group ops into fused kernels (tfc-fuse, on at -O2)"),
      cl::init(false), cl::cat(category)};
  cl::opt<bool> noRemat{
      "no-remat",
      cl::desc("Keep every forward value the backward reads instead of "
               "recomputing cheap ones (tfc-remat, on at -O2)"),
      cl::init(false), cl::cat(category)};
  cl::opt<bool> noSchedule{
      "no-schedule",
      cl::desc("Keep the program order instead of one that lowers peak "
               "memory (tfc-schedule, on at -O2)"),
      cl::init(false), cl::cat(category)};
  cl::opt<std::string> rematBudget{
      "remat-budget",
      cl::desc("Most bytes of forward values kept for the backward; above "
               "it, matmuls are recomputed too (e.g. 2GiB, 500MB; default: "
               "no budget)"),
      cl::value_desc("bytes"), cl::init(""), cl::cat(category)};
  cl::opt<std::string> report{
      "report",
      cl::desc("Write per entry point: kernel count, bytes moved and FLOPs, "
               "arena size and its lower bound, fusion and remat decisions, "
               "as JSON"),
      cl::value_desc("FILE.json"), cl::init(""), cl::cat(category)};
  cl::opt<bool> summary{
      "summary",
      cl::desc("Print a summary of the module after the graph phase "
               "(parameters, state, entries) to stdout"),
      cl::init(false), cl::cat(category)};
};

int fail(const llvm::Twine &message) {
  llvm::errs() << "tfc: error: " << message << "\n";
  return 1;
}

/// An empty path, which would otherwise mean "no output": a usage error,
/// exit 2, as tfc-run's.
int usageError(const llvm::Twine &message) {
  llvm::errs() << "tfc: error: " << message << "\n";
  return 2;
}

/// Shortest text that reads back as `value` ("-2", "0.5"), for messages.
std::string numberText(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

/// Where TFC_OPTIONS opens a quote it never closes, by the GNU rules LLVM
/// splits it with (which would otherwise take the rest of the variable as
/// one argument, silently).
std::optional<size_t> unbalancedQuote(llvm::StringRef text) {
  char quote = 0;
  size_t opened = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote == '\'') {
      if (c == '\'')
        quote = 0;
      continue;
    }
    if (c == '\\') {
      ++i;
      continue;
    }
    if (quote == '"') {
      if (c == '"')
        quote = 0;
      continue;
    }
    if (c == '\'' || c == '"')
      quote = c, opened = i;
  }
  if (quote)
    return opened;
  return std::nullopt;
}

/// The 64-bit CPUs of the host's LLVM target: with an x86-64 triple, those
/// with the "64bit" feature (i386, i686 or pentium4 are x86 CPUs too, and
/// LLVM ends with a fatal error and a stack dump when asked to compile 64-bit
/// code for them).
struct CpuNames {
  std::string triple;
  const llvm::Target *target = nullptr;
  std::string error;

  CpuNames() {
    llvm::InitializeNativeTarget();
    triple = llvm::sys::getDefaultTargetTriple();
    target = llvm::TargetRegistry::lookupTarget(triple, error);
  }

  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(llvm::StringRef cpu) const {
    return std::unique_ptr<llvm::MCSubtargetInfo>(
        target->createMCSubtargetInfo(triple, cpu, ""));
  }

  bool is64Bit(llvm::StringRef cpu) const {
    if (llvm::Triple(triple).getArch() != llvm::Triple::x86_64)
      return true;
    return subtarget(cpu)->checkFeatures("+64bit");
  }

  /// Why `cpu` cannot be compiled for, or "".
  std::string check(llvm::StringRef cpu) const {
    if (!target)
      return "no LLVM target for " + triple + ": " + error;
    // Asked of the generic subtarget: one made for an unknown name warns.
    if (!subtarget("")->isCPUStringValid(cpu))
      return "unknown --cpu='" + cpu.str() +
             "' (native, x86-64, x86-64-v2, x86-64-v3, x86-64-v4, ...; "
             "--cpu=help lists every name)";
    if (!is64Bit(cpu))
      return "--cpu=" + cpu.str() + " is a 32-bit CPU: tfc compiles 64-bit "
             "code for " + triple + " (native, x86-64, x86-64-v2, x86-64-v3, "
             "x86-64-v4, ...; --cpu=help lists every name)";
    return "";
  }

  std::vector<std::string> all() const {
    std::vector<std::string> names;
    if (!target)
      return names;
    for (const llvm::SubtargetSubTypeKV &cpu :
         subtarget("")->getAllProcessorDescriptions())
      if (is64Bit(cpu.Key))
        names.push_back(cpu.Key);
    return names;
  }
};

std::optional<Emit> parseEmit(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Emit>>(name)
      .Case("mlir", Emit::Mlir)
      .Case("llvm", Emit::Llvm)
      .Case("asm", Emit::Asm)
      .Case("obj", Emit::Obj)
      .Case("so", Emit::So)
      .Default(std::nullopt);
}

std::string defaultEmit(llvm::StringRef output) {
  llvm::StringRef ext = llvm::sys::path::extension(output);
  if (ext == ".so")
    return "so";
  if (ext == ".o")
    return "obj";
  if (ext == ".s")
    return "asm";
  if (ext == ".ll")
    return "llvm";
  return "mlir";
}

/// "2GiB", "500MB", "1048576" as bytes.
std::optional<int64_t> parseByteSize(llvm::StringRef text) {
  llvm::StringRef digits = text.take_while(llvm::isDigit);
  llvm::StringRef unit = text.drop_front(digits.size()).trim();
  uint64_t value;
  if (digits.empty() || digits.getAsInteger(10, value))
    return std::nullopt;
  std::optional<uint64_t> scale =
      llvm::StringSwitch<std::optional<uint64_t>>(unit.lower())
          .Cases("", "b", 1)
          .Case("kb", 1000)
          .Case("mb", 1000 * 1000)
          .Case("gb", 1000 * 1000 * 1000)
          .Case("kib", 1ull << 10)
          .Case("mib", 1ull << 20)
          .Case("gib", 1ull << 30)
          .Default(std::nullopt);
  if (!scale || value > (uint64_t)INT64_MAX / *scale)
    return std::nullopt;
  return static_cast<int64_t>(value * *scale);
}

/// An error message when `buffer` is neither MLIR bytecode nor text: a NUL
/// byte or invalid UTF-8, with its line and column, so that tfc refuses a
/// binary file by name instead of echoing its bytes in a parse error.
std::optional<std::string> notTextReason(llvm::MemoryBufferRef buffer) {
  llvm::StringRef text = buffer.getBuffer();
  if (mlir::isBytecode(buffer))
    return std::nullopt;
  size_t bad = text.find('\0');
  const char *what = "a NUL byte";
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(text.data());
  const llvm::UTF8 *invalid = begin;
  if (!llvm::isLegalUTF8String(&invalid, begin + text.size()) &&
      size_t(invalid - begin) < bad) {
    bad = invalid - begin;
    what = "invalid UTF-8";
  }
  if (bad == llvm::StringRef::npos)
    return std::nullopt;
  size_t line = 1 + text.take_front(bad).count('\n');
  size_t column = bad - (text.take_front(bad).rfind('\n') + 1) + 1;
  return llvm::formatv("is not MLIR text: {0} at line {1}, column {2} (byte "
                       "{3}); tfc reads MLIR text or bytecode",
                       what, line, column, bad)
      .str();
}

std::string hexDigest(llvm::StringRef text) {
  auto hash = llvm::SHA256::hash(llvm::arrayRefFromStringRef(text));
  return llvm::toHex(hash, /*LowerCase=*/true);
}

/// Why --dump-ir=DIR would write over one of `inputs` or `outputs`, or "":
/// it writes NN-<pass>.mlir and NN-llvm.ll files into DIR.
std::string dumpCollision(const std::string &dir,
                          llvm::ArrayRef<NamedPath> inputs,
                          llvm::ArrayRef<NamedPath> outputs) {
  auto isDumpName = [](llvm::StringRef name) {
    return name.size() > 3 && llvm::isDigit(name[0]) &&
           llvm::isDigit(name[1]) &&
           name.drop_while(llvm::isDigit).starts_with("-") &&
           (name.ends_with(".mlir") || name.ends_with(".ll"));
  };
  // Dump files already there: one may be a link to an input.
  std::vector<std::string> existing;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec))
    if (isDumpName(llvm::sys::path::filename(it->path())))
      existing.push_back(it->path());
  for (llvm::ArrayRef<NamedPath> group : {inputs, outputs})
    for (const NamedPath &p : group) {
      if (p.path.empty() || p.path == "-")
        continue;
      bool named = isDirectlyInside(p.path, dir) &&
                   isDumpName(llvm::sys::path::filename(p.path));
      bool linked = llvm::any_of(existing, [&](const std::string &e) {
        return isSameFile(e, p.path);
      });
      if (named || linked || isSameFile(p.path, dir))
        return "--dump-ir='" + dir + "' writes numbered files (NN-<pass>.mlir) "
               "over " + p.what + " '" + p.path + "': give another folder";
    }
  return "";
}

/// Sets --dp, --pp and --tp from --mesh=dp=N,pp=S,tp=M; why it cannot, or "".
std::string applyMesh(Options &options) {
  if (options.dataParallel.getNumOccurrences() ||
      options.pipelineParallel.getNumOccurrences() ||
      options.tensorParallel.getNumOccurrences() ||
      options.expertParallel.getNumOccurrences())
    return "give the mesh either with --mesh or with --dp, --pp, --tp and "
           "--ep, not both";
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(options.mesh).split(parts, ',');
  llvm::StringMap<int64_t> sizes;
  for (llvm::StringRef part : parts) {
    auto [key, value] = part.trim().split('=');
    int64_t n = 0;
    if (key == "sp")
      return "sequence parallelism (sp) is not built yet";
    if (key != "dp" && key != "pp" && key != "tp" && key != "ep")
      return "unknown dimension '" + key.str() +
             "' (expected dp, pp, tp or ep)";
    if (value.getAsInteger(10, n) || n < 1 || n > 65536)
      return key.str() + "='" + value.str() + "': give a number of processes, 1 or more";
    if (!sizes.try_emplace(key, n).second)
      return key.str() + " is given twice";
  }
  // A dimension of 1 is none (--dp=1 would compile a world of one rank).
  auto set = [&](cl::opt<int64_t> &flag, llvm::StringRef key) {
    if (int64_t n = sizes.lookup(key); n > 1)
      flag = n;
  };
  set(options.dataParallel, "dp");
  set(options.pipelineParallel, "pp");
  set(options.tensorParallel, "tp");
  set(options.expertParallel, "ep");
  return "";
}

/// Why a --no-decay name matches no parameter of `module`, or "": a typo
/// would otherwise decay the parameter it meant, silently.
std::string unknownNoDecay(mlir::ModuleOp module,
                           llvm::ArrayRef<std::string> patterns,
                           llvm::StringRef input) {
  std::vector<llvm::StringRef> names;
  for (auto param : module.getOps<ParamOp>())
    names.push_back(param.getSymName());
  for (llvm::StringRef pattern : patterns) {
    bool matches = llvm::any_of(names, [&](llvm::StringRef name) {
      return pattern.ends_with("*") ? name.starts_with(pattern.drop_back())
                                    : name == pattern;
    });
    if (matches)
      continue;
    std::string some;
    for (size_t i = 0; i < names.size() && i < 6; ++i)
      some += (i ? ", " : "") + names[i].str();
    if (names.size() > 6)
      some += ", ... (" + std::to_string(names.size()) + " in all)";
    return "--no-decay=" + pattern.str() + ": '" + input.str() +
           "' has no parameter of that name (" +
           (names.empty() ? std::string("it has no parameters")
                          : "parameters: " + some) +
           "; a name ending in * matches a prefix)";
  }
  return "";
}

/// Emits an error at the first loop whose constant step is not positive and
/// fails. MLIR 19's scf verifiers accept `step %c0` (upstream checks it from
/// LLVM 20), and loop analyses divide by the step: a hand-edited planned
/// program must not crash tfc with SIGFPE.
mlir::LogicalResult verifyLoopSteps(mlir::ModuleOp module) {
  auto positive = [](mlir::Operation *op, mlir::ValueRange steps) {
    for (mlir::Value step : steps)
      if (std::optional<int64_t> value = mlir::getConstantIntValue(step);
          value && *value <= 0)
        return mlir::LogicalResult(mlir::emitError(op->getLoc())
                                   << "'" << op->getName() << "' has step "
                                   << *value
                                   << "; a loop's constant step must be "
                                      "positive");
    return mlir::success();
  };
  mlir::WalkResult walk = module.walk([&](mlir::Operation *op) {
    mlir::LogicalResult ok = mlir::success();
    if (auto loop = llvm::dyn_cast<mlir::scf::ForOp>(op))
      ok = positive(op, loop.getStep());
    else if (auto loop = llvm::dyn_cast<mlir::scf::ParallelOp>(op))
      ok = positive(op, loop.getStep());
    return mlir::failed(ok) ? mlir::WalkResult::interrupt()
                            : mlir::WalkResult::advance();
  });
  return mlir::failure(walk.wasInterrupted());
}

llvm::Error writeText(const std::string &path,
                      llvm::function_ref<void(llvm::raw_ostream &)> write) {
  return writeOutput(path, [&](llvm::raw_ostream &os) {
    write(os);
    return llvm::Error::success();
  });
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
  std::string overview;
  {
    llvm::raw_string_ostream os(overview);
    os << "tfc: ahead-of-time compiler for transformer models\n\n"
          "  tfc model.mlir -o model.so --summary        compile to an artifact\n"
          "  tfc model.mlir --compile-to=graph -o g.mlir  read the optimized graph\n"
          "  tfc model.mlir -o model.so --dump-ir=ir/     keep the IR of every pass\n"
          "  tfc model.mlir -o model.so --optimizer=adamw add loss_grad, train_step\n"
          "  tfc model.mlir -o model.so --report=r.json   what the optimizations did\n\n";
    describePipeline(os);
    os << "\nTargets (--target=<name>):\n";
    for (const std::string &name : registeredTargetNames())
      os << "  " << llvm::left_justify(name, 8)
         << lookupTarget(name)->description() << "\n";
    os << "\nOptions in the environment variable TFC_OPTIONS are added to the\n"
          "command line (test suites use it to rerun with, e.g., --no-fuse).\n";
  }
  // libLLVM registers hundreds of backend flags; --help shows tfc's own and
  // the standard MLIR ones (--mlir-print-ir-after-all, --mlir-timing, ...).
  static cl::OptionCategory mlirCategory("MLIR printing, timing and debugging");
  for (auto &entry : cl::getRegisteredOptions()) {
    llvm::StringRef name = entry.getKey();
    if (name.starts_with("mlir-"))
      entry.getValue()->addCategory(mlirCategory);
  }
  cl::HideUnrelatedOptions({&options.category, &mlirCategory});
  if (const char *env = std::getenv("TFC_OPTIONS"))
    if (std::optional<size_t> at = unbalancedQuote(env))
      return fail(llvm::Twine("TFC_OPTIONS='") + env +
                        "': the quote at character " + llvm::Twine(*at + 1) +
                        " is never closed");
  cl::ParseCommandLineOptions(argc, argv, overview, /*Errs=*/nullptr,
                              /*EnvVar=*/"TFC_OPTIONS");

  // An empty path would mean "no output" and write nothing without a word.
  for (auto [path, flag] : {std::pair{&options.output, "-o"},
                             {&options.report, "--report"},
                             {&options.dumpIR, "--dump-ir"}})
    if (path->getNumOccurrences() && path->empty())
      return usageError(llvm::Twine(flag) + " '': give a path" +
                        (path == &options.dumpIR
                             ? " (a folder)"
                             : " ('-' for standard output)"));
  if (options.cpu == "help") {
    CpuNames names;
    llvm::outs() << "CPUs for --cpu (" << names.triple
                 << "): native (this machine's)";
    for (const std::string &name : names.all())
      llvm::outs() << ", " << name;
    llvm::outs() << "\n";
    return 0;
  }
  if (options.cpu != "native")
    if (std::string bad = CpuNames().check(options.cpu); !bad.empty())
      return fail(bad);
  if (options.parallelMinWork < -1)
    return fail("--parallel-min-work=" +
                      llvm::Twine(options.parallelMinWork.getValue()) +
                      ": give the least work of a threaded loop (0: every "
                      "parallel loop; -1: none)");
  if (!options.noDecay.empty() && options.optimizer.empty())
    return fail("--no-decay names parameters of the optimizer's weight "
                      "decay: it needs --optimizer=adamw|sgd");

  // Resolve what to produce before doing any work.
  std::string emitName =
      options.emit.empty() ? defaultEmit(options.output) : options.emit;
  std::optional<Emit> emit = parseEmit(emitName);
  if (!emit)
    return fail("unknown --emit='" + emitName +
                "' (expected mlir, llvm, asm, obj or so)");
  if (options.optLevel > 3)
    return fail("-O" + llvm::Twine(options.optLevel.getValue()) +
                ": the optimization level must be 0, 1, 2 or 3");
  PipelineOptions pipeline;
  pipeline.optLevel = options.optLevel;
  pipeline.target = lookupTarget(options.target);
  if (!pipeline.target)
    return fail("unknown --target='" + options.target + "' (this build has " +
                listTargets() + ")");
  pipeline.targetOptions.cpu = options.cpu;
  pipeline.targetOptions.cudaArch = options.cudaArch;
  if (options.cudaTf32 && options.target != "cuda")
    return fail("--cuda-tf32 applies to --target=cuda only (this is --target=" +
                options.target + ")");
  pipeline.targetOptions.cudaTf32 = options.cudaTf32;
  pipeline.targetOptions.dumpDir = options.dumpIR;
  pipeline.targetOptions.parallelMinWork = options.parallelMinWork;
  if (std::string bad = pipeline.target->checkOptions(pipeline.targetOptions);
      !bad.empty())
    return fail(bad);
  if (!options.optimizer.empty() && options.optimizer != "adamw" &&
      options.optimizer != "sgd")
    return fail("unknown --optimizer='" + options.optimizer +
                "' (expected adamw or sgd)");
  pipeline.optimizer = options.optimizer;
  if (options.mesh.getNumOccurrences()) {
    if (std::string bad = applyMesh(options); !bad.empty())
      return fail("--mesh=" + options.mesh + ": " + bad);
  }
  if (options.expertParallel.getNumOccurrences() || options.expertParallel > 0) {
    const std::string ep = "--ep=" + std::to_string(options.expertParallel);
    if (options.expertParallel < 2 || options.expertParallel > 4096)
      return fail(ep + ": give the number of processes that share the "
                       "experts, 2 or more");
    if (options.optimizer.empty())
      return fail(ep + " shards the experts of train_step: it needs "
                       "--optimizer");
    for (auto [flag, n] : {std::pair<const char *, int64_t>{
                               "--dp", options.dataParallel},
                           {"--tp", options.tensorParallel},
                           {"--pp", options.pipelineParallel},
                           {"--zero", options.zero}})
      if (n > 0)
        return fail(ep + " with " + flag + " is not built yet (expert "
                         "parallelism runs alone, its ranks also data "
                         "parallel)");
    if (options.precision != "f32")
      return fail(ep + " with --precision=" + options.precision +
                  " is not built yet (f32 only)");
    if (pipeline.target->name() != "cpu")
      return fail(ep + " with --target=" + pipeline.target->name().str() +
                  " is not built yet (CPU only)");
    // Its ranks are data-parallel replicas too.
    options.dataParallel = options.expertParallel.getValue();
    pipeline.expertParallel = options.expertParallel;
  }
  // --dp=0 would mean "no data parallelism" as if the flag were left out.
  if ((options.dataParallel.getNumOccurrences() && options.dataParallel < 1) ||
      options.dataParallel > 65536)
    return fail("--dp=" + std::to_string(options.dataParallel) +
                ": give the number of processes, 1 or more");
  if (options.dataParallel > 0 && options.optimizer.empty())
    return fail("--dp=" + std::to_string(options.dataParallel) +
                " averages the gradients of train_step: it needs --optimizer");
  pipeline.dataParallel = options.dataParallel;
  if (options.zero != 0 && options.zero != 1)
    return fail("--zero=" + std::to_string(options.zero) +
                ": only ZeRO stage 1 (optimizer state sharded) is built; give "
                "--zero=1 or --zero=0");
  if (options.zero == 1 && options.optimizer.empty())
    return fail("--zero=1 shards the optimizer's state: it needs "
                "--optimizer=adamw|sgd (and --dp=N)");
  if (options.zero == 1 && options.dataParallel == 0)
    return fail("--zero=1 shards the optimizer's state over data-parallel "
                "ranks: it needs --dp=N (N processes under mpirun)");
  pipeline.zero = options.zero;
  if ((options.tensorParallel.getNumOccurrences() &&
       options.tensorParallel < 1) ||
      options.tensorParallel > 65536)
    return fail("--tp=" + std::to_string(options.tensorParallel) +
                ": give the number of processes, 1 or more");
  pipeline.tensorParallel = options.tensorParallel;
  if (options.microbatches < 1 || options.microbatches > 65536)
    return fail("--microbatches=" + std::to_string(options.microbatches) +
                ": give the number of micro-batches a step takes, 1 or more");
  if (options.microbatches > 1 && options.optimizer.empty())
    return fail("--microbatches=" + std::to_string(options.microbatches) +
                " accumulates the gradients of train_step: it needs "
                "--optimizer");
  pipeline.microbatches = options.microbatches;
  if ((options.pipelineParallel.getNumOccurrences() &&
       options.pipelineParallel < 1) ||
      options.pipelineParallel > 4096)
    return fail("--pp=" + std::to_string(options.pipelineParallel) +
                ": give the number of pipeline stages, 1 or more");
  if (options.ppSchedule != "1f1b" && options.ppSchedule != "gpipe")
    return fail("unknown --pp-schedule='" + options.ppSchedule +
                "' (expected 1f1b or gpipe)");
  if (options.ppSchedule.getNumOccurrences() && options.pipelineParallel == 0)
    return fail("--pp-schedule orders the micro-batches of pipeline stages: "
                "it needs --pp=S");
  if (options.pipelineParallel > 0) {
    const std::string pp = "--pp=" + std::to_string(options.pipelineParallel);
    if (options.optimizer.empty())
      return fail(pp + " splits train_step into stages: it needs --optimizer");
  }
  pipeline.pipelineParallel = options.pipelineParallel;
  pipeline.ppSchedule = options.ppSchedule;
  if (!std::isfinite(options.dpBucketMb) || options.dpBucketMb > 1e6 ||
      (options.dpBucketMb < 0 && options.dpBucketMb != -1))
    return fail("--dp-bucket-mb=" + numberText(options.dpBucketMb) +
                ": give a bucket size in MB (0: one collective per gradient; "
                "-1: one blocking all-reduce per gradient)");
  pipeline.dpBucketMb = options.dpBucketMb;
  pipeline.dpOverlap = options.dpOverlap;
  // ZeRO-1 reduce-scatters each gradient on its own (tfc-zero-shard), a
  // CUDA artifact's collectives are staged through the host one at a time,
  // and --dp with --tp runs its collectives on two process groups, which the
  // runtime keeps on the caller's thread (MPI_THREAD_SERIALIZED allows one
  // thread in MPI at a time, and a bucket would need the communication
  // thread): all take the blocking all-reduce per gradient, not buckets.
  // Expert parallelism's all-gathers run on the caller's thread too.
  const bool twoD = options.dataParallel > 1 &&
                    (options.tensorParallel > 1 || options.pipelineParallel > 1 ||
                     options.expertParallel > 1);
  if (options.dataParallel > 0 &&
      (options.zero == 1 || pipeline.target->name() != "cpu" || twoD)) {
    std::string why =
        options.zero == 1 ? "--zero=1 reduce-scatters each gradient"
        : options.expertParallel > 1
            ? "--ep=" + std::to_string(options.expertParallel) +
                  " all-reduces each gradient on the caller's thread, beside "
                  "its all-gathers"
        : twoD ? "--dp with " +
                     (options.tensorParallel > 1
                          ? "--tp=" + std::to_string(options.tensorParallel)
                          : "--pp=" + std::to_string(options.pipelineParallel)) +
                     " all-reduces each gradient over its data-parallel group"
               : "--target=" + pipeline.target->name().str() +
                     " stages each collective through the host";
    if (options.dpBucketMb.getNumOccurrences() && options.dpBucketMb >= 0)
      return fail("--dp-bucket-mb=" + std::to_string(options.dpBucketMb) +
                  ": " + why + "; gradient buckets are built for plain data "
                  "parallel on the CPU target (leave --dp-bucket-mb out)");
    pipeline.dpBucketMb = -1;
  }
  if (options.precision != "f32" && options.precision != "bf16" &&
      options.precision != "f16")
    return fail("unknown --precision='" + options.precision +
                "' (expected f32, bf16 or f16)");
  if (options.lossScale.getNumOccurrences() &&
      (options.precision != "f16" || options.optimizer.empty()))
    return fail("--loss-scale is for f16 training (--precision=f16 "
                "--optimizer=...)");
  if (double scale = options.lossScale; !(scale > 0) || !std::isfinite(scale))
    return fail("--loss-scale must be a positive finite number");
  pipeline.precision = options.precision;
  pipeline.lossScale = options.lossScale;
  pipeline.noDecay.assign(options.noDecay.begin(), options.noDecay.end());
  pipeline.fuse = !options.noFuse;
  pipeline.remat = !options.noRemat;
  pipeline.schedule = !options.noSchedule;
  if (!options.rematBudget.empty()) {
    std::optional<int64_t> bytes = parseByteSize(options.rematBudget);
    if (!bytes)
      return fail("--remat-budget='" + options.rematBudget +
                  "' is not a size (bytes, or a number with KB, MB, GB, KiB, "
                  "MiB, GiB)");
    pipeline.rematBudget = *bytes;
  }
  if (!options.report.empty() && !options.compileTo.empty() &&
      parsePhase(options.compileTo) < Phase::Kernels)
    return fail("--report needs the kernels phase; it is not reached with "
                "--compile-to=" + options.compileTo);
  // Written as MLIR, the planned program is what people read; an artifact
  // needs every phase.
  pipeline.compileTo = *emit == Emit::Mlir ? Phase::Kernels : lastPhase();
  if (!options.compileTo.empty()) {
    auto phase = parsePhase(options.compileTo);
    if (!phase)
      return fail("unknown --compile-to='" + options.compileTo +
                  "' (phases: " + listPhases() + ")");
    if (*emit != Emit::Mlir && *phase != lastPhase())
      return fail("--compile-to=" + options.compileTo + " goes with --emit=mlir");
    pipeline.compileTo = *phase;
  }
  if (std::string why = pipeline.target->artifactUnavailable();
      !why.empty() && (*emit != Emit::Mlir || pipeline.compileTo == Phase::Llvm))
    return fail("--target=" + options.target + ": " + why);
  std::string out = options.output;
  if (out.empty()) {
    if (*emit == Emit::So || *emit == Emit::Obj)
      return fail("--emit=" + emitName + " needs an output file (-o)");
    out = options.summary ? "" : "-";
  }
  // No output may be the input or another output (support/FileIdentity.h),
  // found before any work: `tfc x.mlir -o x.mlir` would replace the module
  // it compiles.
  {
    std::vector<NamedPath> inputs = {{"the input", options.input}};
    std::vector<NamedPath> outputs = {{"-o", out},
                                      {"--report", options.report}};
    if (llvm::Error err = checkDistinctFiles(inputs, outputs))
      return fail(llvm::toString(std::move(err)));
    if (!options.dumpIR.empty())
      if (std::string bad = dumpCollision(options.dumpIR, inputs, outputs);
          !bad.empty())
        return fail(bad);
  }
  ArtifactOptions artifactOptions;
  artifactOptions.cpu = options.cpu;
  artifactOptions.optLevel = options.optLevel;
  artifactOptions.compilerVersion =
      std::string("tfc ") + TFC_VERSION + " (LLVM " + LLVM_VERSION_STRING + ")";
  std::unique_ptr<llvm::TargetMachine> target;
  std::string kernelsLibrary;
  if (*emit != Emit::Mlir) {
    auto machine = createTargetMachine(artifactOptions);
    if (!machine)
      return fail(llvm::toString(machine.takeError()));
    target = std::move(*machine);
  }
  if (*emit == Emit::So) {
    auto lib = findKernelsLibrary(argv[0]);
    if (!lib)
      return fail(llvm::toString(lib.takeError()));
    kernelsLibrary = *lib;
  }

  mlir::DialectRegistry registry;
  registerDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string errorMessage;
  // As mlir-opt, no input (or '-') is standard input; unlike it, say so when
  // that is a terminal, where tfc would otherwise wait without a word.
  if (options.input == "-" && llvm::sys::Process::StandardInIsUserInput())
    llvm::errs() << "tfc: note: reading the module from standard input (end "
                    "it with Ctrl-D; give a file to compile one, see --help)\n";
  auto file = mlir::openInputFile(options.input, &errorMessage);
  if (!file)
    return fail(errorMessage);
  if (auto reason = notTextReason(file->getMemBufferRef()))
    return fail("'" + options.input + "' " + *reason);
  // MLIR 19's parser can corrupt the heap on some invalid input (issue 13,
  // defect 2): only text that parses in a child is parsed here.
  if (mlir::failed(parseInChildFirst("tfc", options.input, *file, registry,
                                     context.allowsUnregisteredDialects())))
    return 1; // The child has reported file:line:col.
  artifactOptions.moduleHash = hexDigest(file->getBuffer());
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module || mlir::failed(verifyLoopSteps(*module)))
    return 1; // The parser or verifier has reported file:line:col.
  bool hasEntry = false;
  for (auto func : module->getOps<mlir::func::FuncOp>())
    hasEntry |= func.isPublic() && !func.isExternal();
  // A module that tfc itself wrote with --compile-to continues from there.
  Phase reached = phaseReached(*module);
  if (reached == Phase::Llvm)
    return fail("'" + options.input +
                "' is already in the LLVM dialect (--compile-to=llvm output); "
                "compile from the output of an earlier phase (graph, kernels "
                "or codegen)");
  if (!hasEntry)
    return fail("'" + options.input +
                "' has no entry function (a public func.func with a body)");
  if (reached >= Phase::Kernels) {
    if (!options.optimizer.empty())
      return fail("'" + options.input + "' is a planned program (phase " +
                  phaseName(reached) + "); --optimizer needs the graph");
    if (options.precision != "f32")
      return fail("'" + options.input + "' is a planned program (phase " +
                  phaseName(reached) + "); --precision needs the graph");
    if (auto planned =
            (*module)->getAttrOfType<mlir::StringAttr>(attr::kTarget);
        planned && planned.getValue() != pipeline.target->name())
      return fail("'" + options.input + "' was planned for --target=" +
                  planned.getValue() + ", not --target=" + options.target);
    if (pipeline.compileTo < reached)
      return fail("'" + options.input + "' is already past --compile-to=" +
                  phaseName(pipeline.compileTo) + " (it is at phase " +
                  phaseName(reached) + ")");
  }
  if (!options.noDecay.empty())
    if (std::string bad = unknownNoDecay(*module, options.noDecay,
                                         options.input);
        !bad.empty())
      return fail(bad);
  Phase first = reached == Phase::Input
                    ? Phase::Input
                    : static_cast<Phase>(static_cast<int>(reached) + 1);

  auto dumpCounter = std::make_shared<unsigned>(0);
  if (!options.dumpIR.empty())
    if (llvm::Error err = startIRDump(options.dumpIR, *module))
      return fail("--dump-ir: " + llvm::toString(std::move(err)));
  auto runPhases = [&](Phase from, Phase to) {
    mlir::PassManager pm(&context);
    if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
      return mlir::failure();
    mlir::applyDefaultTimingPassManagerCLOptions(pm);
    if (!options.dumpIR.empty())
      pm.addInstrumentation(
          createIRDumpInstrumentation(options.dumpIR, dumpCounter));
    buildPipeline(pm, pipeline, from, to);
    return pm.run(*module);
  };

  // Graph phases, the summary, then the planned program and its code; the
  // artifact's tables are read from it before it is lowered to LLVM.
  Phase graphEnd = std::min(pipeline.compileTo, Phase::Graph);
  if (first <= graphEnd && mlir::failed(runPhases(first, graphEnd)))
    return 1;
  if (options.summary)
    printModuleSummary(*module, llvm::outs());
  Phase plannedEnd = std::min(pipeline.compileTo, Phase::Codegen);
  Phase plannedFirst = std::max(first, Phase::Kernels);
  if (plannedFirst <= plannedEnd &&
      mlir::failed(runPhases(plannedFirst, plannedEnd)))
    return 1;

  if (!options.report.empty()) {
    std::string settings = "-O" + std::to_string(options.optLevel);
    for (auto [off, flag] : {std::pair{!pipeline.fuse, " --no-fuse"},
                             {!pipeline.remat, " --no-remat"},
                             {!pipeline.schedule, " --no-schedule"}})
      if (off)
        settings += flag;
    if (pipeline.rematBudget)
      settings += " --remat-budget=" + std::to_string(pipeline.rematBudget);
    if (llvm::Error err = writeText(options.report, [&](llvm::raw_ostream &os) {
          writeReport(*module, options.input, settings, os);
        }))
      return fail("cannot write '" + options.report +
                  "': " + llvm::toString(std::move(err)));
  }

  std::optional<ArtifactTables> tables;
  if (*emit != Emit::Mlir) {
    auto read = readArtifactTables(*module);
    if (!read)
      return fail(llvm::toString(read.takeError()));
    tables = std::move(*read);
  }
  if (pipeline.compileTo == Phase::Llvm &&
      mlir::failed(runPhases(std::max(first, Phase::Llvm), Phase::Llvm)))
    return 1;

  if (*emit == Emit::Mlir) {
    if (out.empty())
      return 0;
    if (llvm::Error err = writeText(out, [&](llvm::raw_ostream &os) {
          module->print(os);
          os << "\n";
        }))
      return fail("cannot write '" + out + "': " + llvm::toString(std::move(err)));
    return 0;
  }

  llvm::LLVMContext llvmContext;
  auto llvmModule = buildArtifactModule(*module, *tables, llvmContext,
                                       *target, artifactOptions);
  if (!llvmModule)
    return fail(llvm::toString(llvmModule.takeError()));
  if (!options.dumpIR.empty()) {
    llvm::SmallString<256> path(options.dumpIR);
    llvm::sys::path::append(path, llvm::formatv("{0:02}-llvm.ll",
                                                ++*dumpCounter).str());
    if (llvm::Error err = writeText(std::string(path), [&](llvm::raw_ostream &os) {
          (*llvmModule)->print(os, nullptr);
        }))
      llvm::errs() << "tfc: warning: --dump-ir: " << llvm::toString(std::move(err))
                   << "\n";
  }
  switch (*emit) {
  case Emit::Llvm:
    if (llvm::Error err = writeText(out, [&](llvm::raw_ostream &os) {
          (*llvmModule)->print(os, nullptr);
        }))
      return fail("cannot write '" + out + "': " + llvm::toString(std::move(err)));
    return 0;
  case Emit::Asm:
  case Emit::Obj: {
    ObjectKind kind = *emit == Emit::Asm ? ObjectKind::Assembly : ObjectKind::Object;
    if (llvm::Error err = writeOutput(out, [&](llvm::raw_ostream &os) -> llvm::Error {
          llvm::SmallVector<char, 0> buffer;
          llvm::raw_svector_ostream bufferStream(buffer);
          if (llvm::Error e = emitCode(**llvmModule, *target, kind, bufferStream))
            return e;
          os.write(buffer.data(), buffer.size());
          return llvm::Error::success();
        }))
      return fail("cannot write '" + out + "': " + llvm::toString(std::move(err)));
    return 0;
  }
  case Emit::So: {
    llvm::SmallString<128> objectPath;
    int fd;
    if (auto ec = llvm::sys::fs::createTemporaryFile("tfc-model", "o", fd,
                                                     objectPath))
      return fail("cannot create a temporary object file: " + ec.message());
    llvm::FileRemover removeObject(objectPath);
    {
      llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
      if (llvm::Error err = emitCode(**llvmModule, *target, ObjectKind::Object, os))
        return fail(llvm::toString(std::move(err)));
    }
    if (llvm::Error err = linkSharedObject(std::string(objectPath),
                                           kernelsLibrary, out))
      return fail(llvm::toString(std::move(err)));
    return 0;
  }
  case Emit::Mlir:
    break;
  }
  return 0;
}

} // namespace tfc
