//===- LaunchParallel.cpp - the tfc-cpu-launch-parallel pass --------------===//
//
// The second half of tfc-cpu-parallel-loops, in the LLVM dialect, where a
// buffer is a pointer and any argument list fits in a struct: every call of a
// part function (`{tfc.parallel = array<i64: n, grain>}`) becomes
//
//   ctx = {the call's arguments but begin and end}   (a stack slot)
//   tfc_kernels_parallel_for(n, grain, @part_task, &ctx)
//
// where @part_task(ctx, begin, end) unpacks the struct and calls the part on
// [begin, end). The kernel library forwards to the host's parallel_for (the
// runtime's thread pool), or runs the whole range when there is none.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace tfc::cpu {
#define GEN_PASS_DEF_TFCCPULAUNCHPARALLEL
#include "codegen/cpu/Passes.h.inc"
} // namespace tfc::cpu

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kParallelFor = "tfc_kernels_parallel_for";

struct LaunchParallelPass
    : public tfc::cpu::impl::TfcCpuLaunchParallelBase<LaunchParallelPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    SymbolTable symbols(module);
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    Type i64 = IntegerType::get(ctx, 64);
    Type voidType = LLVM::LLVMVoidType::get(ctx);
    OpBuilder b(ctx);

    SmallVector<LLVM::LLVMFuncOp> parts;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (fn->hasAttr(tfc::cpu::kParallelAttr))
        parts.push_back(fn);
    if (parts.empty())
      return;

    auto launch = symbols.lookup<LLVM::LLVMFuncOp>(kParallelFor);
    if (!launch) {
      b.setInsertionPointToEnd(module.getBody());
      launch = b.create<LLVM::LLVMFuncOp>(
          module.getLoc(), kParallelFor,
          LLVM::LLVMFunctionType::get(voidType, {i64, i64, ptr, ptr}));
      symbols.insert(launch);
    }

    DenseMap<StringAttr, SmallVector<LLVM::CallOp>> callsOf;
    module.walk([&](LLVM::CallOp call) {
      if (auto callee = call.getCalleeAttr())
        callsOf[callee.getAttr()].push_back(call);
    });

    for (LLVM::LLVMFuncOp part : parts) {
      auto range =
          part->getAttrOfType<DenseI64ArrayAttr>(tfc::cpu::kParallelAttr);
      part->removeAttr(tfc::cpu::kParallelAttr);
      if (!range || range.size() != 2) {
        part.emitError("tfc.parallel must be array<i64: n, grain>");
        return signalPassFailure();
      }
      Location loc = part.getLoc();
      ArrayRef<Type> params = part.getFunctionType().getParams();
      if (params.size() < 2 ||
          params.take_back(2) != ArrayRef<Type>{i64, i64}) {
        part.emitError("a parallel part ends with (begin: i64, end: i64)");
        return signalPassFailure();
      }
      auto ctxType = LLVM::LLVMStructType::getLiteral(ctx, params.drop_back(2));
      // The address of field i of a context struct at `base`.
      auto field = [&](Value base, size_t i) -> Value {
        return b.create<LLVM::GEPOp>(
            loc, ptr, ctxType, base,
            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      };

      // @part_task(ctx, begin, end): unpack, call the part.
      b.setInsertionPointAfter(part);
      auto task = b.create<LLVM::LLVMFuncOp>(
          loc, (part.getName() + "_task").str(),
          LLVM::LLVMFunctionType::get(voidType, {ptr, i64, i64}),
          LLVM::Linkage::Internal);
      symbols.insert(task);
      Block *entry = task.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      SmallVector<Value> args;
      for (auto [i, type] : llvm::enumerate(params.drop_back(2))) {
        args.push_back(
            b.create<LLVM::LoadOp>(loc, type, field(entry->getArgument(0), i)));
      }
      args.push_back(entry->getArgument(1));
      args.push_back(entry->getArgument(2));
      b.create<LLVM::CallOp>(loc, part, args);
      b.create<LLVM::ReturnOp>(loc, ValueRange{});

      // Each call: pack the arguments, launch.
      for (LLVM::CallOp call : callsOf.lookup(part.getSymNameAttr())) {
        auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
        b.setInsertionPointToStart(&caller.getBody().front());
        Value one = b.create<LLVM::ConstantOp>(loc, i64, 1);
        Value slot = b.create<LLVM::AllocaOp>(loc, ptr, ctxType, one);
        b.setInsertionPoint(call);
        for (auto [i, value] :
             llvm::enumerate(call.getArgOperands().drop_back(2))) {
          b.create<LLVM::StoreOp>(loc, value, field(slot, i));
        }
        Value n = b.create<LLVM::ConstantOp>(loc, i64, range[0]);
        Value grain = b.create<LLVM::ConstantOp>(loc, i64, range[1]);
        Value fn = b.create<LLVM::AddressOfOp>(loc, task);
        b.create<LLVM::CallOp>(loc, launch, ValueRange{n, grain, fn, slot});
        call.erase();
      }
    }
  }
};

} // namespace
