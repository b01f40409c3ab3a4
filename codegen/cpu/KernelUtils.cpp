//===- KernelUtils.cpp - helpers shared by the kernel emitters ------------===//
#include "codegen/cpu/KernelEmitters.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace tfc::cpu {

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}

func::FuncOp declareExternal(OpBuilder &b, Operation *anchor, StringRef name,
                             FunctionType type) {
  auto module = llvm::dyn_cast<ModuleOp>(anchor);
  if (!module)
    module = anchor->getParentOfType<ModuleOp>();
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto func = b.create<func::FuncOp>(module.getLoc(), name, type);
  func.setPrivate();
  return func;
}

Value loadScalar(OpBuilder &b, Location loc, Value memref) {
  return b.create<memref::LoadOp>(loc, memref, ValueRange{});
}

Value pointerOf(OpBuilder &b, Location loc, Value memref) {
  Value index =
      b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, memref);
  Value i64 = b.create<arith::IndexCastOp>(loc, b.getI64Type(), index);
  return b.create<LLVM::IntToPtrOp>(
      loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

void emitRuntimeError(OpBuilder &b, Location loc, Operation *anchor,
                      StringRef message) {
  // The module comes from `anchor`, not from the insertion point: emitters
  // call this from scf.if/scf.for body builders, whose blocks are not yet
  // attached to an operation.
  auto module = anchor->getParentOfType<ModuleOp>();
  if (!module)
    module = llvm::dyn_cast<ModuleOp>(anchor);
  // One global per distinct message, named by a hash of its text.
  std::string name =
      "tfc_error_" + std::to_string(llvm::hash_value(message) & 0xffffffffu);
  auto global = module.lookupSymbol<LLVM::GlobalOp>(name);
  if (!global) {
    OpBuilder moduleBuilder = OpBuilder::atBlockBegin(module.getBody());
    std::string terminated(message);
    terminated.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), terminated.size());
    global = moduleBuilder.create<LLVM::GlobalOp>(
        module.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::Internal,
        name, b.getStringAttr(terminated), /*alignment=*/0);
  }
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  Value text = b.create<LLVM::AddressOfOp>(loc, ptrType, global.getSymName());
  auto fnType = b.getFunctionType({ptrType}, {});
  auto fn = declareExternal(b, module, "tfc_kernels_error", fnType);
  b.create<func::CallOp>(loc, fn, ValueRange{text});
}

AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> outShape) {
  int64_t offset = outShape.size() - shape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == 1 && outShape[i + offset] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(i + offset, ctx));
  }
  return AffineMap::get(outShape.size(), 0, exprs, ctx);
}

Value flatten(OpBuilder &b, Location loc, Value memref) {
  auto type = llvm::cast<MemRefType>(memref.getType());
  if (type.getRank() == 1)
    return memref;
  if (type.getRank() == 0) {
    // A 0-d memref expands to one element; there is nothing to collapse.
    auto flatType = MemRefType::get({1}, type.getElementType());
    return b.create<memref::ExpandShapeOp>(loc, flatType, memref,
                                           ArrayRef<ReassociationIndices>{});
  }
  ReassociationIndices all =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return b.create<memref::CollapseShapeOp>(
      loc, memref, SmallVector<ReassociationIndices>{all});
}

void copyElements(OpBuilder &b, Location loc, Value src, Value dst) {
  b.create<linalg::CopyOp>(loc, src, dst);
}

void forRange(OpBuilder &b, Location loc, int64_t count, LoopBody body) {
  b.create<scf::ForOp>(
      loc, indexConst(b, loc, 0), indexConst(b, loc, count),
      indexConst(b, loc, 1), ValueRange{},
      [&](OpBuilder &nb, Location nloc, Value iv, ValueRange) {
        body(nb, nloc, iv);
        nb.create<scf::YieldOp>(nloc);
      });
}

void parallelRange(OpBuilder &b, Location loc, int64_t count, LoopBody body) {
  b.create<scf::ParallelOp>(
      loc, ValueRange{indexConst(b, loc, 0)},
      ValueRange{indexConst(b, loc, count)}, ValueRange{indexConst(b, loc, 1)},
      [&](OpBuilder &nb, Location nloc, ValueRange ivs) {
        body(nb, nloc, ivs[0]);
      });
}

SmallVector<Value> reduceRange(OpBuilder &b, Location loc, int64_t start,
                               int64_t count, ValueRange inits,
                               ReductionBody body) {
  auto loop = b.create<scf::ForOp>(
      loc, indexConst(b, loc, start), indexConst(b, loc, count),
      indexConst(b, loc, 1), inits,
      [&](OpBuilder &nb, Location nloc, Value iv, ValueRange acc) {
        nb.create<scf::YieldOp>(nloc, body(nb, nloc, iv, acc));
      });
  return SmallVector<Value>(loop.getResults());
}

DimSplit splitAtDim(ArrayRef<int64_t> shape, int64_t dim) {
  DimSplit split;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (static_cast<int64_t>(i) < dim)
      split.outer *= d;
    else if (static_cast<int64_t>(i) == dim)
      split.size = d;
    else
      split.inner *= d;
  }
  return split;
}

void forEachLine(OpBuilder &b, Location loc, const DimSplit &split,
                 LoopBody body) {
  int64_t outerStride = split.size * split.inner;
  Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1);
  // One parallel loop over (outer, inner), so that lines along a leading
  // dimension split over threads too; the common case (the last dimension)
  // has no inner loop.
  SmallVector<Value> lbs{zero}, ubs{indexConst(b, loc, split.outer)},
      steps{one};
  if (split.inner != 1) {
    lbs.push_back(zero);
    ubs.push_back(indexConst(b, loc, split.inner));
    steps.push_back(one);
  }
  b.create<scf::ParallelOp>(
      loc, lbs, ubs, steps,
      [&](OpBuilder &b, Location loc, ValueRange ivs) {
        Value base = b.create<arith::MulIOp>(
            loc, ivs[0], indexConst(b, loc, outerStride));
        if (split.inner != 1)
          base = b.create<arith::AddIOp>(loc, base, ivs[1]);
        body(b, loc, base);
      });
}

Value lineIndex(OpBuilder &b, Location loc, Value base, Value j,
                int64_t stride) {
  Value offset = stride == 1 ? j
                             : b.create<arith::MulIOp>(
                                   loc, j, indexConst(b, loc, stride))
                                   .getResult();
  return b.create<arith::AddIOp>(loc, base, offset);
}

Type elementTypeOf(Value memref) {
  return llvm::cast<MemRefType>(memref.getType()).getElementType();
}

ArrayRef<int64_t> shapeOf(Value memref) {
  return llvm::cast<MemRefType>(memref.getType()).getShape();
}

} // namespace tfc::cpu
