//===- ArtifactWriter.cpp - planned program -> model.so -------------------===//
#include "codegen/artifact/ArtifactWriter.h"

#include "codegen/artifact/AbiTypes.h"
#include "support/OutputFile.h"
#include "dialects/tfc/AttrNames.h"
#include "dialects/tfc/TfcOps.h"
#include "tfc/artifact_abi.h"
#include "tfc/artifact_checksum.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;

namespace tfc {
namespace {

using TensorInfo = ArtifactTensor;
using EntryInfo = ArtifactEntry;
using ArgKind = ArtifactArgKind;

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

TensorInfo tensorInfo(StringRef name, ShapedType type, StringRef init = "",
                      uint32_t flags = 0) {
  TensorInfo info;
  info.name = name.str();
  info.dtype = abiElementType(type.getElementType());
  info.shape.assign(type.getShape().begin(), type.getShape().end());
  info.init = init.str();
  info.flags = flags;
  return info;
}

} // namespace

llvm::Expected<ArtifactTables> readArtifactTables(ModuleOp module) {
  ArtifactTables info;
  for (auto f : module.getOps<LLVM::LLVMFuncOp>())
    return error(Twine("the module is already in the LLVM dialect (@") +
                 f.getName() +
                 "): an artifact is built from the planned program "
                 "(--compile-to=kernels or codegen), not from "
                 "--compile-to=llvm output");
  if (auto meta = module->getAttrOfType<StringAttr>(attr::kMetadata)) {
    info.metadata = meta.str();
    module->removeAttr(attr::kMetadata);
  }
  if (auto device = module->getAttrOfType<StringAttr>(attr::kDevice)) {
    if (device.getValue() != "cuda")
      return error("unknown " + Twine(attr::kDevice) + " '" +
                   device.getValue() + "' (expected cuda)");
    auto arch = module->getAttrOfType<StringAttr>(attr::kDeviceArch);
    auto kernels = module->getAttrOfType<ArrayAttr>(attr::kDeviceKernels);
    auto image = module->getAttrOfType<StringAttr>(attr::kDeviceImage);
    auto portable = module->getAttrOfType<StringAttr>(attr::kDevicePortable);
    if (!arch || !kernels || !image || !portable)
      return error("the module's device kernels are incomplete (run the "
                   "target's codegen phase, e.g. tfc-cuda-compile-kernels)");
    info.device.kind = TFC_DEVICE_CUDA;
    info.device.arch = arch.str();
    for (Attribute name : kernels) {
      auto text = llvm::dyn_cast<StringAttr>(name);
      if (!text)
        return error(Twine(attr::kDeviceKernels) + " holds a non-string");
      info.device.kernels.push_back(text.str());
    }
    info.device.image = image.str();
    info.device.portable = portable.str();
    for (StringRef name : {attr::kDevice, attr::kDeviceArch,
                           attr::kDeviceKernels, attr::kDeviceImage,
                           attr::kDevicePortable})
      module->removeAttr(name);
  }
  SmallVector<Operation *> declarations;
  for (Operation &op : module.getBody()->getOperations()) {
    if (auto p = llvm::dyn_cast<ParamOp>(op)) {
      info.params.push_back(tensorInfo(p.getSymName(), p.getTensorType(),
                                       p.getInit(),
                                       p.getFrozen() ? TFC_TENSOR_FROZEN : 0));
      declarations.push_back(&op);
    } else if (auto s = llvm::dyn_cast<StateOp>(op)) {
      info.state.push_back(
          tensorInfo(s.getSymName(), s.getTensorType(), s.getInit()));
      declarations.push_back(&op);
    }
  }
  SymbolTable symbols(module);
  for (auto func : module.getOps<func::FuncOp>()) {
    auto entryName = func->getAttrOfType<StringAttr>(attr::kEntry);
    if (!entryName)
      continue;
    EntryInfo entry;
    entry.name = entryName.str();
    entry.symbol = "tfc_entry_" + entry.name;
    auto arenaBytes = func->getAttrOfType<IntegerAttr>(attr::kArenaBytes);
    auto numKernels = func->getAttrOfType<IntegerAttr>(attr::kNumKernels);
    if (!arenaBytes || !numKernels)
      return error(Twine("entry '") + entry.name + "' has no " +
                   attr::kArenaBytes +
                   " or " + attr::kNumKernels +
                   " (run tfc-lower-to-kernels and tfc-plan-memory first)");
    entry.arenaBytes = arenaBytes.getInt();
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto type = llvm::dyn_cast<MemRefType>(func.getArgument(i).getType());
      if (!type)
        return error("entry '" + entry.name + "': argument " + Twine(i) +
                     " is not a buffer (run tfc-lower-to-kernels first)");
      auto name = func.getArgAttrOfType<StringAttr>(i, attr::kName);
      auto nameOr = [&](const Twine &fallback) {
        return name ? name.getValue().str() : fallback.str();
      };
      if (auto a = func.getArgAttrOfType<IntegerAttr>(i, attr::kParamIndex)) {
        entry.args.push_back({ArgKind::Param, a.getInt()});
      } else if (auto a =
                     func.getArgAttrOfType<IntegerAttr>(i, attr::kStateIndex)) {
        entry.args.push_back({ArgKind::State, a.getInt()});
      } else if (auto a =
                     func.getArgAttrOfType<IntegerAttr>(i, attr::kInputIndex)) {
        entry.args.push_back({ArgKind::Input, a.getInt()});
        entry.inputs.push_back(
            tensorInfo(nameOr("input" + Twine(a.getInt())), type));
      } else if (auto a = func.getArgAttrOfType<IntegerAttr>(
                     i, attr::kOutputIndex)) {
        entry.args.push_back({ArgKind::Output, a.getInt()});
        entry.outputs.push_back(
            tensorInfo(nameOr("output" + Twine(a.getInt())), type));
      } else if (func.getArgAttr(i, attr::kArena)) {
        entry.args.push_back({ArgKind::Arena, 0});
      } else {
        return error("entry '" + entry.name + "': argument " + Twine(i) +
                     " has no tfc role (run tfc-lower-to-kernels first)");
      }
    }
    // The kernel launches, in call order (the cost sits on the kernel).
    func.walk([&](func::CallOp call) {
      auto kernel = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!kernel || !kernel->hasAttr(attr::kKernel))
        return;
      ArtifactKernel k;
      k.name = call.getCallee().str();
      if (auto ops = kernel->getAttrOfType<StringAttr>(attr::kKernelOps))
        k.ops = ops.str();
      if (auto cost = kernel->getAttrOfType<DenseI64ArrayAttr>(attr::kKernelCost);
          cost && cost.size() == 3) {
        k.flops = cost[0];
        k.bytesRead = cost[1];
        k.bytesWritten = cost[2];
      }
      entry.kernels.push_back(std::move(k));
    });
    if (static_cast<int64_t>(entry.kernels.size()) != numKernels.getInt())
      return error("entry '" + entry.name + "' calls " +
                   Twine(entry.kernels.size()) + " kernels but its " +
                   attr::kNumKernels + " says " + Twine(numKernels.getInt()));
    func.setName(entry.symbol);
    // The roles are in the tables now; LLVM IR has no use for them.
    func.removeArgAttrsAttr();
    func.removeResAttrsAttr();
    for (StringRef name :
         {attr::kEntry, attr::kArenaBytes, attr::kNumKernels,
          attr::kIntermediateBytes, attr::kLiveBoundBytes})
      func->removeAttr(name);
    info.entries.push_back(std::move(entry));
  }
  if (info.entries.empty())
    return error("the module has no lowered entry (run tfc-lower-to-kernels)");
  for (auto func : module.getOps<func::FuncOp>())
    for (StringRef name : {attr::kKernelCost, attr::kKernelOps})
      func->removeAttr(name);
  for (Operation *op : declarations)
    op->erase();
  return info;
}

namespace {

/// Emits the constant tables and trampolines of artifact_abi.h into `m`.
class TableEmitter {
public:
  TableEmitter(llvm::Module &m, const ArtifactTables &info,
               const ArtifactOptions &options, llvm::TargetMachine &target)
      : m(m), ctx(m.getContext()), info(info), options(options),
        target(target), b(ctx) {
    AbiTypes abi = getAbiTypes(ctx);
    ptr = abi.ptr;
    i32 = abi.i32;
    i64 = abi.i64;
    tensorDesc = abi.tensorDesc;
    entryDesc = abi.entry;
    kernelDesc = abi.kernelDesc;
    artifact = abi.artifact;
    hostApi = abi.hostApi;
  }

  llvm::Error emit() {
    std::vector<llvm::Constant *> entries;
    for (const EntryInfo &e : info.entries) {
      auto trampoline = emitTrampoline(e);
      if (!trampoline)
        return trampoline.takeError();
      entries.push_back(llvm::ConstantStruct::get(
          entryDesc,
          {str(e.name), b.getInt32(e.inputs.size()),
           b.getInt32(e.outputs.size()), tensorTable(e.inputs, e.name + ".in"),
           tensorTable(e.outputs, e.name + ".out"), b.getInt64(e.arenaBytes),
           b.getInt64(e.kernels.size()), *trampoline,
           kernelTable(e.kernels, e.name + ".kernels")}));
    }
    llvm::Constant *entryTable = global(
        llvm::ConstantArray::get(llvm::ArrayType::get(entryDesc, entries.size()),
                                 entries),
        "tfc.entries");
    std::string target = m.getTargetTriple() + ":" + cpuName();
    uint64_t size = m.getDataLayout().getTypeAllocSize(artifact);
    llvm::Constant *table = llvm::ConstantStruct::get(
        artifact,
        {b.getInt32(TFC_ARTIFACT_MAGIC), b.getInt32(TFC_ARTIFACT_ABI_VERSION),
         b.getInt32(size), b.getInt32(0), str(target),
         str(options.compilerVersion), str(options.moduleHash),
         str(info.metadata), b.getInt32(info.params.size()),
         b.getInt32(info.state.size()), b.getInt32(info.entries.size()),
         b.getInt32(0), tensorTable(info.params, "params"),
         tensorTable(info.state, "state"), entryTable,
         b.getInt32(info.device.kind),
         b.getInt32(info.device.kernels.size()), str(info.device.arch),
         stringTable(info.device.kernels, "device_kernels"),
         bytes(info.device.image, "device_image"),
         b.getInt64(info.device.image.size()),
         info.device.kind == TFC_DEVICE_CPU
             ? static_cast<llvm::Constant *>(llvm::ConstantPointerNull::get(ptr))
             : str(info.device.portable)});
    llvm::Constant *artifactGlobal = global(table, "tfc.artifact");

    // const tfc_artifact_t* tfc_artifact_v<N>(void)
    auto *getter = llvm::Function::Create(
        llvm::FunctionType::get(ptr, {}, false),
        llvm::GlobalValue::ExternalLinkage, TFC_ARTIFACT_SYMBOL, m);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", getter));
    b.CreateRet(artifactGlobal);
    return llvm::Error::success();
  }

private:
  std::string cpuName() const {
    return target.getTargetCPU().str();
  }

  llvm::GlobalVariable *global(llvm::Constant *init, const Twine &name) {
    auto *g = new llvm::GlobalVariable(m, init->getType(), /*isConstant=*/true,
                                       llvm::GlobalValue::PrivateLinkage, init,
                                       name);
    return g;
  }

  llvm::Constant *str(StringRef s) {
    return b.CreateGlobalStringPtr(s, "tfc.str", 0, &m);
  }

  llvm::Constant *stringTable(const std::vector<std::string> &strings,
                              const std::string &name) {
    if (strings.empty())
      return llvm::ConstantPointerNull::get(ptr);
    std::vector<llvm::Constant *> pointers;
    for (const std::string &s : strings)
      pointers.push_back(str(s));
    return global(llvm::ConstantArray::get(
                      llvm::ArrayType::get(ptr, pointers.size()), pointers),
                  "tfc." + name);
  }

  /// Raw bytes (a device image), aligned for any loader; null when empty.
  llvm::Constant *bytes(StringRef data, const std::string &name) {
    if (data.empty())
      return llvm::ConstantPointerNull::get(ptr);
    auto *g = global(llvm::ConstantDataArray::getRaw(
                         data, data.size(), llvm::Type::getInt8Ty(ctx)),
                     "tfc." + name);
    llvm::cast<llvm::GlobalVariable>(g)->setAlignment(llvm::Align(64));
    return g;
  }

  llvm::Constant *tensorTable(const std::vector<TensorInfo> &tensors,
                              const std::string &name) {
    if (tensors.empty())
      return llvm::ConstantPointerNull::get(ptr);
    std::vector<llvm::Constant *> descs;
    for (const TensorInfo &t : tensors) {
      std::vector<llvm::Constant *> dims;
      for (int64_t d : t.shape)
        dims.push_back(b.getInt64(d));
      llvm::Constant *shape =
          dims.empty()
              ? static_cast<llvm::Constant *>(llvm::ConstantPointerNull::get(ptr))
              : global(llvm::ConstantArray::get(
                           llvm::ArrayType::get(i64, dims.size()), dims),
                       "tfc.shape");
      descs.push_back(llvm::ConstantStruct::get(
          tensorDesc, {str(t.name), b.getInt32(t.dtype),
                       b.getInt32(t.shape.size()), shape, str(t.init),
                       b.getInt32(t.flags), b.getInt32(0)}));
    }
    return global(llvm::ConstantArray::get(
                      llvm::ArrayType::get(tensorDesc, descs.size()), descs),
                  "tfc." + name);
  }

  llvm::Constant *kernelTable(const std::vector<ArtifactKernel> &kernels,
                              const std::string &name) {
    if (kernels.empty())
      return llvm::ConstantPointerNull::get(ptr);
    // Kernels launched several times share their strings.
    llvm::StringMap<llvm::Constant *> strings;
    auto shared = [&](StringRef s) {
      llvm::Constant *&c = strings[s];
      if (!c)
        c = str(s);
      return c;
    };
    std::vector<llvm::Constant *> descs;
    for (const ArtifactKernel &k : kernels)
      descs.push_back(llvm::ConstantStruct::get(
          kernelDesc, {shared(k.name), shared(k.ops), b.getInt64(k.flops),
                       b.getInt64(k.bytesRead), b.getInt64(k.bytesWritten)}));
    return global(llvm::ConstantArray::get(
                      llvm::ArrayType::get(kernelDesc, descs.size()), descs),
                  "tfc." + name);
  }

  /// int32_t tfc_call_<name>(host, params, state, inputs, outputs, arena):
  /// sets the kernels' host, unpacks the pointer arrays into the entry's
  /// arguments, calls it, and turns a pending kernel error into a report.
  llvm::Expected<llvm::Function *> emitTrampoline(const EntryInfo &e) {
    llvm::Function *callee = m.getFunction(e.symbol);
    if (!callee)
      return error("entry function '" + e.symbol + "' is missing after lowering");
    auto *fnType =
        llvm::FunctionType::get(i32, {ptr, ptr, ptr, ptr, ptr, ptr}, false);
    auto *fn = llvm::Function::Create(fnType, llvm::GlobalValue::InternalLinkage,
                                      "tfc_call_" + e.name, m);
    auto *body = llvm::BasicBlock::Create(ctx, "entry", fn);
    b.SetInsertPoint(body);
    llvm::Value *host = fn->getArg(0);
    auto setHost = m.getOrInsertFunction(
        "tfc_kernels_set_host", llvm::FunctionType::get(b.getVoidTy(), {ptr}, false));
    auto takeError = m.getOrInsertFunction(
        "tfc_kernels_take_error", llvm::FunctionType::get(ptr, {}, false));
    b.CreateCall(setHost, {host});
    std::vector<llvm::Value *> args;
    for (auto [kind, index] : e.args) {
      if (kind == ArgKind::Arena) {
        args.push_back(fn->getArg(5));
        continue;
      }
      unsigned array = kind == ArgKind::Param   ? 1
                       : kind == ArgKind::State ? 2
                       : kind == ArgKind::Input ? 3
                                                : 4;
      llvm::Value *slot =
          b.CreateConstInBoundsGEP1_64(ptr, fn->getArg(array), index);
      args.push_back(b.CreateLoad(ptr, slot));
    }
    if (callee->arg_size() != args.size())
      return error("entry '" + e.name + "' takes " +
                   Twine(callee->arg_size()) + " arguments after lowering, " +
                   "the table describes " + Twine(args.size()));
    b.CreateCall(callee, args);
    llvm::Value *message = b.CreateCall(takeError, {});
    auto *failed = llvm::BasicBlock::Create(ctx, "failed", fn);
    auto *done = llvm::BasicBlock::Create(ctx, "done", fn);
    b.CreateCondBr(b.CreateIsNull(message), done, failed);
    b.SetInsertPoint(failed);
    llvm::Value *reportSlot =
        b.CreateStructGEP(hostApi, host, AbiTypes::kHostReportError);
    llvm::Value *report = b.CreateLoad(ptr, reportSlot);
    llvm::Value *user = b.CreateLoad(
        ptr, b.CreateStructGEP(hostApi, host, AbiTypes::kHostUser));
    b.CreateCall(llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr}, false),
                 report, {user, message});
    b.CreateRet(b.getInt32(1));
    b.SetInsertPoint(done);
    b.CreateRet(b.getInt32(0));
    return fn;
  }

  llvm::Module &m;
  llvm::LLVMContext &ctx;
  const ArtifactTables &info;
  const ArtifactOptions &options;
  llvm::TargetMachine &target;
  llvm::IRBuilder<> b;
  llvm::PointerType *ptr;
  llvm::IntegerType *i32, *i64;
  llvm::StructType *tensorDesc, *entryDesc, *kernelDesc, *artifact, *hostApi;
};

void optimize(llvm::Module &m, llvm::TargetMachine &target, int optLevel) {
  if (optLevel == 0)
    return;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder pb(&target, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel == 1   ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  pb.buildPerModuleDefaultPipeline(level).run(m, mam);
}

} // namespace

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const ArtifactOptions &options) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string triple = llvm::sys::getDefaultTargetTriple();
  std::string message;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, message);
  if (!target)
    return error("no LLVM target for " + triple + ": " + message);
  std::string cpu = options.cpu;
  std::string features;
  if (cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures f;
    for (auto &feature : llvm::sys::getHostCPUFeatures())
      f.AddFeature(feature.first(), feature.second);
    features = f.getString();
  }
  llvm::TargetOptions targetOptions;
  auto level = options.optLevel == 0 ? llvm::CodeGenOptLevel::None
                                     : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      level));
  if (!machine)
    return error("cannot create a target machine for " + triple + " cpu " + cpu);
  // An unknown CPU name makes LLVM print a warning and fall back to generic;
  // refuse it instead so that `--cpu=x86-64-v5` is an error.
  if (options.cpu != "native" &&
      !machine->getMCSubtargetInfo()->isCPUStringValid(cpu))
    return error("unknown --cpu='" + cpu +
                 "' (try native, x86-64, x86-64-v2, x86-64-v3, x86-64-v4)");
  return machine;
}

llvm::Expected<std::unique_ptr<llvm::Module>>
buildArtifactModule(ModuleOp module, const ArtifactTables &tables,
                    llvm::LLVMContext &context, llvm::TargetMachine &target,
                    const ArtifactOptions &options) {
  MLIRContext *mlirContext = module.getContext();
  registerBuiltinDialectTranslation(*mlirContext);
  registerLLVMDialectTranslation(*mlirContext);

  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "tfc_artifact");
  if (!llvmModule)
    return error("translating the LLVM dialect to LLVM IR failed");
  // Kernels stay functions: inlined into one entry, thousands of loop nests
  // make a single huge function that LLVM's loop passes scale badly on
  // (minutes for a training step), and a call per kernel costs nothing next
  // to the kernel's own work.
  for (llvm::Function &f : *llvmModule)
    if (!f.isDeclaration() && f.hasLocalLinkage())
      f.addFnAttr(llvm::Attribute::NoInline);
  llvmModule->setTargetTriple(target.getTargetTriple().str());
  llvmModule->setDataLayout(target.createDataLayout());

  TableEmitter emitter(*llvmModule, tables, options, target);
  if (llvm::Error err = emitter.emit())
    return std::move(err);
  std::string verifyMessage;
  llvm::raw_string_ostream verifyStream(verifyMessage);
  if (llvm::verifyModule(*llvmModule, &verifyStream))
    return error("internal error: the artifact's LLVM IR is invalid: " +
                 verifyMessage);
  optimize(*llvmModule, target, options.optLevel);
  return llvmModule;
}

llvm::Error emitCode(llvm::Module &module, llvm::TargetMachine &target,
                     ObjectKind kind, llvm::raw_pwrite_stream &os) {
  llvm::legacy::PassManager pm;
  auto fileType = kind == ObjectKind::Assembly
                      ? llvm::CodeGenFileType::AssemblyFile
                      : llvm::CodeGenFileType::ObjectFile;
  if (target.addPassesToEmitFile(pm, os, nullptr, fileType))
    return error("the target cannot emit this kind of file");
  pm.run(module);
  return llvm::Error::success();
}

llvm::Expected<std::string> findKernelsLibrary(const char *argv0) {
  if (const char *env = std::getenv("TFC_KERNELS_LIB")) {
    if (!llvm::sys::fs::exists(env))
      return error("TFC_KERNELS_LIB='" + Twine(env) + "' does not exist");
    return std::string(env);
  }
  std::string exe = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&findKernelsLibrary));
  llvm::SmallString<256> path(llvm::sys::path::parent_path(exe));
  llvm::sys::path::append(path, "..", "lib", "libtfc_cpu_kernels.a");
  if (!llvm::sys::fs::exists(path))
    return error("cannot find the kernel library at '" + path +
                 "' (set TFC_KERNELS_LIB)");
  return std::string(path);
}

llvm::Error linkSharedObject(const std::string &objectPath,
                             const std::string &kernelsLibrary,
                             const std::string &outputPath) {
  std::string linker;
  if (const char *env = std::getenv("TFC_LINKER")) {
    linker = env;
  } else {
    for (const char *candidate : {"c++", "g++", "clang++"}) {
      if (auto found = llvm::sys::findProgramByName(candidate)) {
        linker = *found;
        break;
      }
    }
  }
  if (linker.empty())
    return error("no linker found (looked for c++, g++, clang++ on PATH; set "
                 "TFC_LINKER)");

  // Export only the artifact symbol: kernels and the kernel library stay
  // internal, so two artifacts loaded into one process never collide.
  llvm::SmallString<128> script, temp;
  int fd;
  if (auto ec = llvm::sys::fs::createTemporaryFile("tfc-exports", "map", fd,
                                                   script))
    return error("cannot create a temporary file: " + ec.message());
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << "{ global: " << TFC_ARTIFACT_SYMBOL << "; local: *; };\n";
  }
  llvm::FileRemover removeScript(script);
  // The linker writes a temporary; commit() puts it in place (OutputFile.h).
  auto output = OutputFile::create(outputPath);
  if (!output)
    return output.takeError();
  temp = output->tempPath();
  std::string versionScript = "-Wl,--version-script=" + script.str().str();
  llvm::SmallVector<llvm::StringRef> argv = {
      linker,          "-shared",      "-o",           temp.str(),
      objectPath,      kernelsLibrary, versionScript,  "-Wl,-z,noexecstack",
      "-lm"};
  std::string errorMessage;
  llvm::SmallString<128> logPath;
  llvm::sys::fs::createTemporaryFile("tfc-link", "log", logPath);
  llvm::FileRemover removeLog(logPath);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath.str(),
                                                logPath.str()};
  int rc = llvm::sys::ExecuteAndWait(linker, argv, std::nullopt, redirects, 0,
                                     0, &errorMessage);
  if (rc != 0) {
    std::string log;
    if (auto buffer = llvm::MemoryBuffer::getFile(logPath))
      log = (*buffer)->getBuffer().str();
    return error("linking '" + outputPath + "' with " + linker + " failed" +
                 (errorMessage.empty() ? "" : ": " + errorMessage) + "\n" +
                 log);
  }
  if (llvm::Error err = appendChecksumTrailer(temp.str().str(), outputPath))
    return err;
  return output->commit();
}

llvm::Error appendChecksumTrailer(const std::string &path,
                                  const std::string &outputPath) {
  // The runtime refuses a file whose trailer is missing or whose bytes no
  // longer hash to it, before dlopen() could crash on them
  // (tfc/artifact_checksum.h).
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error("cannot read back the linked '" + outputPath +
                 "': " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  unsigned char trailer[TFC_ARTIFACT_TRAILER_SIZE];
  tfc_checksum_trailer(trailer, bytes.size(),
                       tfc_checksum64(bytes.data(), bytes.size()));
  buffer->reset();
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Append);
  if (!ec) {
    os.write(reinterpret_cast<const char *>(trailer), sizeof(trailer));
    os.close();
    if (os.has_error()) {
      ec = os.error();
      os.clear_error();
    }
  }
  if (ec)
    return error("cannot write the checksum of '" + outputPath +
                 "': " + ec.message());
  return llvm::Error::success();
}

} // namespace tfc
