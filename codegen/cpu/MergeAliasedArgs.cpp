//===- MergeAliasedArgs.cpp - the tfc-cpu-merge-aliased-args pass ---------===//
//
// A kernel that updates a buffer in place (AdamW's parameter and moments, a
// residual added into its input) is called with the same buffer for an
// operand and a result, but sees two pointers. LLVM cannot prove they are
// equal, so the vectorizer guards the loop with run-time overlap checks,
// which an in-place call fails (the ranges are the same), and the call takes
// the scalar loop. When every call passes the same value in two positions,
// the kernel gets one argument for both: its loads and stores then use one
// pointer at the same index, which the vectorizer handles without checks.
// "The same value" includes two views of one arena at the same constant
// offset: the memory plan's in-place reuse, where the result's buffer is the
// operand's (GELU's backward into its incoming gradient) but each is its own
// memref.view, SSA-distinct.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"
#include "dialects/tfc/AttrNames.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"

namespace tfc::cpu {
#define GEN_PASS_DEF_TFCCPUMERGEALIASEDARGS
#include "codegen/cpu/Passes.h.inc"
} // namespace tfc::cpu

using namespace mlir;

namespace {

/// Whether |a| and |b| are the same buffer: one value, or views of one base
/// at equal offsets (equal values or equal constants) with one type.
bool sameBuffer(Value a, Value b) {
  if (a == b)
    return true;
  auto va = a.getDefiningOp<memref::ViewOp>();
  auto vb = b.getDefiningOp<memref::ViewOp>();
  if (!va || !vb || va.getSource() != vb.getSource() ||
      va.getType() != vb.getType() || va.getSizes() != vb.getSizes())
    return false;
  if (va.getByteShift() == vb.getByteShift())
    return true;
  APInt oa, ob;
  return matchPattern(va.getByteShift(), m_ConstantInt(&oa)) &&
         matchPattern(vb.getByteShift(), m_ConstantInt(&ob)) && oa == ob;
}

void mergeAliasedArgs(func::FuncOp kernel, ArrayRef<func::CallOp> calls) {
  unsigned n = kernel.getNumArguments();
  llvm::BitVector erased(n);
  for (unsigned j = 0; j < n; ++j) {
    for (unsigned i = 0; i < j; ++i) {
      if (erased[i] ||
          kernel.getArgument(i).getType() != kernel.getArgument(j).getType())
        continue;
      bool alwaysSame = llvm::all_of(calls, [&](func::CallOp call) {
        return sameBuffer(call.getOperand(i), call.getOperand(j));
      });
      if (!alwaysSame)
        continue;
      kernel.getArgument(j).replaceAllUsesWith(kernel.getArgument(i));
      erased.set(j);
      break;
    }
  }
  if (erased.none())
    return;
  kernel.eraseArguments(erased);
  for (func::CallOp call : calls)
    call->eraseOperands(erased);
}

struct MergeAliasedArgsPass
    : public tfc::cpu::impl::TfcCpuMergeAliasedArgsBase<MergeAliasedArgsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    DenseMap<StringAttr, SmallVector<func::CallOp>> callsOf;
    module.walk([&](func::CallOp call) {
      callsOf[call.getCalleeAttr().getAttr()].push_back(call);
    });
    // Every symbol's uses, counted in one walk of the module's region (asking
    // for one kernel's uses walks the whole module: quadratic in the kernels;
    // asked of the module op, a symbol table, the walk would stop at it).
    std::optional<SymbolTable::UseRange> allUses =
        SymbolTable::getSymbolUses(&module.getBodyRegion());
    if (!allUses)
      return; // an op with unknown symbol uses: leave every signature alone
    DenseMap<StringAttr, size_t> useCount;
    for (const SymbolTable::SymbolUse &use : *allUses)
      ++useCount[use.getSymbolRef().getRootReference()];
    for (auto kernel : module.getOps<func::FuncOp>()) {
      if (!kernel->hasAttr(tfc::attr::kKernel) || kernel.isExternal())
        continue;
      // A kernel referenced other than by calls keeps its signature.
      auto calls = callsOf.lookup(kernel.getSymNameAttr());
      if (calls.empty() || useCount.lookup(kernel.getSymNameAttr()) != calls.size())
        continue;
      mergeAliasedArgs(kernel, calls);
    }
  }
};

} // namespace
