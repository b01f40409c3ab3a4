//===- CompileKernels.cpp - the tfc-cuda-compile-kernels pass -------------===//
//
// NVRTC, linked at build time from the CUDA toolkit (no GPU needed): each
// kernel's source after the shared prelude -> PTX for the chosen
// architecture. Kernels are compiled one program each, so that a failure
// names its kernel and shows NVRTC's log for it alone.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Passes.h"

#include "codegen/cuda/CudaAttrs.h"
#include "codegen/cuda/CudaSource.h"
#include "dialects/tfc/AttrNames.h"

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
  std::string log, ptx;
};

/// Compiles `source` for `arch` ("sm_90") to PTX.
Compiled compile(const std::string &source, llvm::StringRef name,
                 llvm::StringRef arch) {
  Compiled out;
  nvrtcProgram program;
  std::string file = (name + ".cu").str();
  if (nvrtcCreateProgram(&program, source.c_str(), file.c_str(), 0, nullptr,
                         nullptr) != NVRTC_SUCCESS) {
    out.log = "nvrtcCreateProgram failed";
    return out;
  }
  // PTX for the virtual architecture of `arch` (compute_90a for sm_90a).
  std::string virtualArch =
      "--gpu-architecture=compute_" + arch.drop_front(3).str();
  // IEEE division and square root, denormals kept: the CPU's numbers.
  const char *options[] = {virtualArch.c_str(), "--std=c++17",
                           "-default-device"};
  nvrtcResult status = nvrtcCompileProgram(
      program, static_cast<int>(std::size(options)), options);
  size_t logSize = 0;
  if (nvrtcGetProgramLogSize(program, &logSize) == NVRTC_SUCCESS &&
      logSize > 1) {
    out.log.resize(logSize);
    nvrtcGetProgramLog(program, out.log.data());
    out.log.resize(logSize - 1);
  }
  if (status == NVRTC_SUCCESS) {
    size_t ptxSize = 0;
    if (nvrtcGetPTXSize(program, &ptxSize) == NVRTC_SUCCESS) {
      out.ptx.resize(ptxSize);
      nvrtcGetPTX(program, out.ptx.data());
      if (!out.ptx.empty() && out.ptx.back() == '\0')
        out.ptx.pop_back();
      out.ok = true;
    }
  } else if (out.log.empty()) {
    out.log = nvrtcGetErrorString(status);
  }
  nvrtcDestroyProgram(&program);
  return out;
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
    Builder b(module.getContext());
    bool ok = true;
    for (auto kernel : module.getOps<func::FuncOp>()) {
      auto code = kernel->getAttrOfType<StringAttr>(cuda::attr::kSource);
      if (!code)
        continue;
      std::string source = cuda::kernelPrelude().str() + "\n" + code.str();
      StringRef name = kernel.getName();
      if (!dumpDir.empty())
        writeFile(dumpDir, (name + ".cu").str(), source);
      Compiled result = compile(source, name, arch);
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
        writeFile(dumpDir, (name + ".ptx").str(), result.ptx);
      kernel->setAttr(cuda::attr::kPtxBytes,
                      b.getI64IntegerAttr(result.ptx.size()));
    }
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
