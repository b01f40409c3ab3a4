//===- KernelTimers.cpp - the tfc-cpu-kernel-timers pass ------------------===//
//
// Brackets each kernel launch of a planned entry with calls that the kernel
// library forwards to the host's profiling hooks (tfc_host_api_t's
// kernel_begin/kernel_end). The launch index is the position in the
// artifact's per-entry kernel table, which the artifact writer fills in the
// same call order.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"
#include "dialects/tfc/AttrNames.h"

#include "mlir/IR/SymbolTable.h"

namespace tfc::cpu {
#define GEN_PASS_DEF_TFCCPUKERNELTIMERS
#include "codegen/cpu/Passes.h.inc"
} // namespace tfc::cpu

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kBegin = "tfc_kernels_kernel_begin";
constexpr llvm::StringLiteral kEnd = "tfc_kernels_kernel_end";

struct KernelTimersPass
    : public tfc::cpu::impl::TfcCpuKernelTimersBase<KernelTimersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    OpBuilder builder(module.getContext());
    auto declare = [&](StringRef name) {
      if (auto existing = symbols.lookup<func::FuncOp>(name))
        return existing;
      builder.setInsertionPointToEnd(module.getBody());
      auto fn = builder.create<func::FuncOp>(
          module.getLoc(), name,
          builder.getFunctionType({builder.getI32Type()}, {}));
      fn.setPrivate();
      symbols.insert(fn);
      return fn;
    };

    for (auto entry : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!entry->hasAttr(tfc::attr::kEntry))
        continue;
      SmallVector<func::CallOp> launches;
      bool timed = false;
      entry.walk([&](func::CallOp call) {
        if (call.getCallee() == kBegin)
          timed = true;
        auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
        if (callee && callee->hasAttr(tfc::attr::kKernel))
          launches.push_back(call);
      });
      if (timed || launches.empty())
        continue;
      func::FuncOp begin = declare(kBegin), end = declare(kEnd);
      for (auto [index, call] : llvm::enumerate(launches)) {
        builder.setInsertionPoint(call);
        Value id = builder.create<arith::ConstantIntOp>(
            call.getLoc(), static_cast<int64_t>(index), 32);
        builder.create<func::CallOp>(call.getLoc(), begin, ValueRange{id});
        builder.setInsertionPointAfter(call);
        builder.create<func::CallOp>(call.getLoc(), end, ValueRange{id});
      }
    }
  }
};

} // namespace
