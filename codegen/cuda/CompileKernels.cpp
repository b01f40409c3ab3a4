//===- CompileKernels.cpp - the tfc-cuda-compile-kernels pass -------------===//
//
// NVRTC, linked at build time from the CUDA toolkit (no GPU needed): every
// kernel, as one program that includes the kernel library's headers (handed
// to NVRTC in memory, KernelLibrary.h), becomes a cubin for the chosen
// architecture and PTX for newer GPUs, which the artifact embeds.
// When that fails, or --dump-ir wants each kernel's PTX, every kernel is
// also compiled alone, so that a failure names its kernel and shows NVRTC's
// log for it alone.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Passes.h"

#include "codegen/cuda/CudaAttrs.h"
#include "codegen/cuda/CudaSource.h"
#include "codegen/cuda/KernelLibrary.h"
#include "dialects/tfc/AttrNames.h"

#include "mlir/IR/Builders.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <nvrtc.h>

#define DEBUG_TYPE "tfc-cuda-compile-kernels"

namespace tfc::cuda {
#define GEN_PASS_DEF_TFCCUDACOMPILEKERNELS
#include "codegen/cuda/Passes.h.inc"

llvm::StringRef supportedArchitectures() {
  return "sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_120";
}

bool isSupportedArchitecture(llvm::StringRef arch) {
  return llvm::StringSwitch<bool>(arch)
      .Cases("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", true)
      .Cases("sm_100", "sm_120", true)
      .Default(false);
}
} // namespace tfc::cuda

using namespace mlir;
using namespace tfc;

namespace {

struct Compiled {
  bool ok = false;
  std::string log, code;
};

enum class Output { Ptx, Cubin };

/// Compiles `source` with NVRTC: PTX for the virtual architecture of `arch`
/// ("sm_90" -> compute_90), or a cubin for `arch` itself.
Compiled compile(const std::string &source, llvm::StringRef name,
                 llvm::StringRef arch, Output output) {
  Compiled out;
  nvrtcProgram program;
  std::string file = (name + ".cu").str();
  const cuda::NvrtcHeaders &headers = cuda::nvrtcHeaders();
  if (nvrtcCreateProgram(&program, source.c_str(), file.c_str(),
                         static_cast<int>(headers.texts.size()),
                         headers.texts.data(),
                         headers.names.data()) != NVRTC_SUCCESS) {
    out.log = "nvrtcCreateProgram failed";
    return out;
  }
  std::string archOption =
      "--gpu-architecture=" +
      (output == Output::Ptx ? "compute_" + arch.drop_front(3).str()
                             : arch.str());
  // IEEE division and square root, denormals kept: the CPU's numbers. For
  // machine code, ptxas says what each kernel spills (spillBytes).
  std::vector<const char *> options = {archOption.c_str(), "--std=c++17",
                                       "-default-device"};
  if (output == Output::Cubin)
    options.push_back("--ptxas-options=-v");
  nvrtcResult status = nvrtcCompileProgram(
      program, static_cast<int>(options.size()), options.data());
  size_t logSize = 0;
  if (nvrtcGetProgramLogSize(program, &logSize) == NVRTC_SUCCESS &&
      logSize > 1) {
    out.log.resize(logSize);
    nvrtcGetProgramLog(program, out.log.data());
    out.log.resize(logSize - 1);
  }
  if (status == NVRTC_SUCCESS) {
    size_t size = 0;
    if (output == Output::Ptx &&
        nvrtcGetPTXSize(program, &size) == NVRTC_SUCCESS) {
      out.code.resize(size);
      out.ok = nvrtcGetPTX(program, out.code.data()) == NVRTC_SUCCESS;
      if (!out.code.empty() && out.code.back() == '\0')
        out.code.pop_back();
    } else if (output == Output::Cubin &&
               nvrtcGetCUBINSize(program, &size) == NVRTC_SUCCESS) {
      out.code.resize(size);
      out.ok = nvrtcGetCUBIN(program, out.code.data()) == NVRTC_SUCCESS;
    }
    if (!out.ok)
      out.log = "NVRTC compiled the program but did not return its code";
  } else if (out.log.empty()) {
    out.log = nvrtcGetErrorString(status);
  }
  nvrtcDestroyProgram(&program);
  return out;
}

/// Per kernel, the bytes ptxas spilled to local memory (stores and loads), from
/// its verbose log ("Function properties for k3_add" followed by "0 bytes
/// stack frame, 8 bytes spill stores, 8 bytes spill loads").
llvm::StringMap<int64_t> spillBytes(llvm::StringRef log) {
  llvm::StringMap<int64_t> spills;
  llvm::StringRef function;
  llvm::SmallVector<llvm::StringRef> lines;
  log.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    constexpr llvm::StringLiteral kProperties = "Function properties for ";
    if (size_t at = line.find(kProperties); at != llvm::StringRef::npos) {
      function = line.drop_front(at + kProperties.size()).trim();
      continue;
    }
    if (function.empty() || !line.contains("spill stores"))
      continue;
    int64_t total = 0;
    for (llvm::StringRef what : {"bytes spill stores", "bytes spill loads"}) {
      size_t at = line.find(what);
      if (at == llvm::StringRef::npos)
        continue;
      llvm::StringRef number = line.take_front(at).rtrim();
      number = number.drop_front(number.find_last_of(" ,") + 1);
      int64_t value = 0;
      if (!number.getAsInteger(10, value))
        total += value;
    }
    if (total > 0)
      spills[function] = total;
    function = {};
  }
  return spills;
}

void writeFile(llvm::StringRef dir, llvm::StringRef name,
               llvm::StringRef text) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    llvm::errs() << "tfc: warning: cannot write '" << path
                 << "': " << ec.message() << "\n";
    return;
  }
  os << text;
}

struct CompileKernelsPass
    : public tfc::cuda::impl::TfcCudaCompileKernelsBase<CompileKernelsPass> {
  using TfcCudaCompileKernelsBase::TfcCudaCompileKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!cuda::isSupportedArchitecture(arch)) {
      module.emitError("tfc-cuda-compile-kernels: unknown architecture '")
          << arch << "' (expected one of " << cuda::supportedArchitectures()
          << ")";
      return signalPassFailure();
    }
    if (!dumpDir.empty())
      if (std::error_code ec = llvm::sys::fs::create_directories(dumpDir)) {
        module.emitError("tfc-cuda-compile-kernels: cannot create '")
            << dumpDir << "': " << ec.message();
        return signalPassFailure();
      }
    SmallVector<func::FuncOp> kernels;
    for (auto kernel : module.getOps<func::FuncOp>())
      if (kernel->hasAttr(cuda::attr::kSource))
        kernels.push_back(kernel);

    // One module, so that the kernels share the prelude's error word (the
    // prelude's include guard keeps it to one definition).
    std::string source;
    for (func::FuncOp kernel : kernels)
      source += cuda::kernelSourcePreamble().str() +
                kernel->getAttrOfType<StringAttr>(cuda::attr::kSource).str() +
                "\n";
    Compiled ptx = compile(source, "kernels", arch, Output::Ptx);
    // Alone, each kernel's failure names it and its .ptx can be read.
    if (!ptx.ok || !dumpDir.empty()) {
      if (!compileEach(kernels, ptx))
        return signalPassFailure();
      if (!ptx.ok) {
        mlir::emitError(module.getLoc(), "NVRTC cannot compile the kernels together for ")
            << arch << ":\n"
            << ptx.log;
        return signalPassFailure();
      }
    }
    Compiled cubin = compile(source, "kernels", arch, Output::Cubin);
    if (!cubin.ok) {
      mlir::emitError(module.getLoc(), "NVRTC cannot compile the kernels to machine code for ")
          << arch << ":\n"
          << cubin.log;
      return signalPassFailure();
    }

    Builder b(module.getContext());
    SmallVector<Attribute> names;
    llvm::StringMap<int64_t> spills = spillBytes(cubin.log);
    for (auto [i, kernel] : llvm::enumerate(kernels)) {
      kernel->setAttr(attr::kDeviceKernelIndex, b.getI32IntegerAttr(i));
      names.push_back(b.getStringAttr(kernel.getName()));
      if (int64_t bytes = spills.lookup(kernel.getName()))
        kernel->setAttr(cuda::attr::kSpillBytes, b.getI64IntegerAttr(bytes));
    }
    module->setAttr(attr::kDevice, b.getStringAttr("cuda"));
    module->setAttr(attr::kDeviceArch, b.getStringAttr(arch));
    module->setAttr(attr::kDeviceKernels, b.getArrayAttr(names));
    module->setAttr(attr::kDeviceImage, b.getStringAttr(cubin.code));
    module->setAttr(attr::kDevicePortable, b.getStringAttr(ptx.code));
  }

  /// Compiles every kernel alone (after the prelude's include); with
  /// dump-dir, writes its .cu and .ptx, and the library's headers to
  /// dump-dir/tfc/ for the .cu to include. Reports each failure at its kernel.
  /// A module of one kernel reuses `whole`, the module's compile (its source is
  /// that kernel's).
  bool compileEach(ArrayRef<func::FuncOp> kernels, const Compiled &whole) {
    bool ok = true;
    if (!dumpDir.empty()) {
      llvm::SmallString<256> dir(dumpDir);
      llvm::sys::path::append(dir, cuda::kKernelHeaderDir);
      if (std::error_code ec = llvm::sys::fs::create_directories(dir))
        llvm::errs() << "tfc: warning: cannot create '" << dir
                     << "': " << ec.message() << "\n";
      for (const cuda::KernelHeader &header : cuda::kernelHeaders())
        writeFile(dir, header.name, header.text);
    }
    for (func::FuncOp kernel : kernels) {
      auto code = kernel->getAttrOfType<StringAttr>(cuda::attr::kSource);
      std::string source = cuda::kernelSourcePreamble().str() + code.str();
      StringRef name = kernel.getName();
      if (!dumpDir.empty())
        writeFile(dumpDir, (name + ".cu").str(), source);
      Compiled result = kernels.size() == 1 && whole.ok
                            ? whole
                            : compile(source, name, arch, Output::Ptx);
      if (!result.ok) {
        // At the location alone: the kernel (a declaration holding its
        // source) printed as "current operation" would bury NVRTC's log.
        mlir::emitError(kernel.getLoc(), "NVRTC cannot compile kernel @")
            << name << " for " << arch << ":\n"
            << result.log;
        ok = false;
        continue;
      }
      if (!dumpDir.empty())
        writeFile(dumpDir, (name + ".ptx").str(), result.code);
    }
    return ok;
  }
};

} // namespace
