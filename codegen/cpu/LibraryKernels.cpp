//===- LibraryKernels.cpp - ops computed by the hand-written kernels ------===//
//
// matmul, linear, attention, sample and the mixture-of-experts ops call
// codegen/cpu/kernels (packed, register-blocked, multi-threaded code). The
// emitters only compute sizes and strides and pass pointers. The library is
// f32: 16-bit floats are widened into f32 buffers around the call and the
// results rounded once (emitInF32).
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/KernelEmitters.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace tfc::cpu {
namespace {

Value i64(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(v));
}
Value i32(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantOp>(loc, b.getI32IntegerAttr(v));
}
Value f32(OpBuilder &b, Location loc, double v) {
  return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(v));
}

void call(OpBuilder &b, Operation *op, StringRef name, ValueRange args) {
  SmallVector<Type> types;
  for (Value a : args)
    types.push_back(a.getType());
  auto fn = declareExternal(b, op, name, b.getFunctionType(types, {}));
  b.create<func::CallOp>(op->getLoc(), fn, args);
}

bool isHalf(Value buffer) {
  Type t = llvm::cast<MemRefType>(buffer.getType()).getElementType();
  return t.isF16() || t.isBF16();
}

/// dst = src element by element, converted to dst's element type (widening
/// is exact; narrowing rounds to nearest even).
void convertElements(OpBuilder &b, Location loc, Value src, Value dst) {
  auto type = llvm::cast<MemRefType>(dst.getType());
  AffineMap id =
      AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext());
  SmallVector<utils::IteratorType> iters(type.getRank(),
                                         utils::IteratorType::parallel);
  b.create<linalg::GenericOp>(
      loc, ValueRange{src}, ValueRange{dst}, ArrayRef<AffineMap>{id, id}, iters,
      [](OpBuilder &nb, Location l, ValueRange args) {
        nb.create<linalg::YieldOp>(
            l, castScalar(nb, l, args[0], args[1].getType()));
      });
}

/// The library computes in f32. For 16-bit floats, `emit` gets f32 copies of
/// the 16-bit operands and f32 buffers for the 16-bit results, which are
/// rounded once into the real results afterwards: every sum (dot products,
/// the online softmax's state) stays in f32. Other buffers pass unchanged.
/// The conversions are linear in the buffers' sizes: small beside a
/// product's work at large M, but at decode (M = 1) the widened weights and
/// their allocation cost more than the product itself (gpt2-124m decodes 3.4x
/// slower in bf16 than in f32). The fix is a library that reads 16-bit
/// weights as it streams or packs them.
void emitInF32(OpBuilder &b, Location loc, ValueRange operands,
               ValueRange results,
               llvm::function_ref<void(ValueRange, ValueRange)> emit) {
  SmallVector<Value> ins, outs, temporaries;
  auto f32Like = [&](Value v) {
    auto type = llvm::cast<MemRefType>(v.getType());
    Value t = b.create<memref::AllocOp>(
        loc, MemRefType::get(type.getShape(), b.getF32Type()));
    temporaries.push_back(t);
    return t;
  };
  for (Value v : operands) {
    if (!isHalf(v)) {
      ins.push_back(v);
      continue;
    }
    ins.push_back(f32Like(v));
    convertElements(b, loc, v, ins.back());
  }
  for (Value v : results)
    outs.push_back(isHalf(v) ? f32Like(v) : v);
  emit(ins, outs);
  for (auto [computed, result] : llvm::zip(outs, results))
    if (computed != result)
      convertElements(b, loc, computed, result);
  for (Value t : temporaries)
    b.create<memref::DeallocOp>(loc, t);
}

/// Copies `src` broadcast to `batch` + its own last two dims into a fresh
/// buffer, for matmul operands whose batch broadcast no stride can express.
Value materializeBatch(OpBuilder &b, Location loc, Value src,
                       ArrayRef<int64_t> batch) {
  auto type = llvm::cast<MemRefType>(src.getType());
  SmallVector<int64_t> shape(batch);
  shape.append(type.getShape().take_back(2).begin(),
               type.getShape().take_back(2).end());
  auto outType = MemRefType::get(shape, type.getElementType());
  Value out = b.create<memref::AllocOp>(loc, outType);
  MLIRContext *ctx = b.getContext();
  int64_t offset = shape.size() - type.getRank();
  SmallVector<AffineExpr> exprs;
  for (auto [i, d] : llvm::enumerate(type.getShape())) {
    if (d == 1 && shape[i + offset] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(i + offset, ctx));
  }
  SmallVector<AffineMap> maps = {
      AffineMap::get(shape.size(), 0, exprs, ctx),
      AffineMap::getMultiDimIdentityMap(shape.size(), ctx)};
  SmallVector<utils::IteratorType> iters(shape.size(),
                                         utils::IteratorType::parallel);
  b.create<linalg::GenericOp>(loc, ValueRange{src}, ValueRange{out}, maps,
                              iters,
                              [](OpBuilder &nb, Location l, ValueRange args) {
                                nb.create<linalg::YieldOp>(l, args[0]);
                              });
  return out;
}

bool emitMatmul(OpBuilder &b, MatmulOp op, ValueRange operands,
                ValueRange results) {
  Location loc = op.getLoc();
  auto outType = llvm::cast<MemRefType>(results[0].getType());
  ArrayRef<int64_t> outShape = outType.getShape();
  ArrayRef<int64_t> batch = outShape.drop_back(2);
  int64_t batchCount = numElements(batch);
  int64_t m = outShape[outShape.size() - 2], n = outShape.back();
  auto lhsShape = llvm::cast<MemRefType>(operands[0].getType()).getShape();
  int64_t k = op.getTransposeLhs() ? lhsShape[lhsShape.size() - 2]
                                   : lhsShape.back();
  SmallVector<Value> temporaries;
  // A stride per operand: the full matrix size when its batch equals the
  // result's, 0 when it has a single matrix, else materialize the broadcast.
  auto strideFor = [&](Value &v) -> int64_t {
    auto shape = llvm::cast<MemRefType>(v.getType()).getShape();
    int64_t matrix = shape[shape.size() - 2] * shape.back();
    int64_t count = numElements(shape.drop_back(2));
    if (count == 1)
      return batchCount == 1 ? matrix : 0;
    SmallVector<int64_t> padded(batch.size() - (shape.size() - 2), 1);
    padded.append(shape.begin(), shape.end() - 2);
    if (llvm::ArrayRef<int64_t>(padded) == batch)
      return matrix;
    v = materializeBatch(b, loc, v, batch);
    temporaries.push_back(v);
    return matrix;
  };
  Value lhs = operands[0], rhs = operands[1];
  int64_t strideA = strideFor(lhs), strideB = strideFor(rhs);
  call(b, op, "tfc_k_matmul_f32",
       {pointerOf(b, loc, lhs), pointerOf(b, loc, rhs),
        pointerOf(b, loc, results[0]), i64(b, loc, batchCount),
        i64(b, loc, m), i64(b, loc, n), i64(b, loc, k),
        i32(b, loc, op.getTransposeLhs()), i32(b, loc, op.getTransposeRhs()),
        i64(b, loc, strideA), i64(b, loc, strideB), i64(b, loc, m * n),
        i32(b, loc, 0)});
  for (Value t : temporaries)
    b.create<memref::DeallocOp>(loc, t);
  return true;
}

bool emitLinear(OpBuilder &b, LinearOp op, ValueRange operands,
                ValueRange results) {
  emitLinearCall(b, op, operands[0], operands[1],
                 op.getBias() ? operands[2] : Value(), /*residual=*/Value(),
                 results[0], op.getTransposeWeight(), LinearActivation::None);
  return true;
}

/// The size and masking arguments shared by attention and its gradient:
/// B, H, Hkv, Tq, Tk, D, Dv, causal, offset, scale. `offsetBuffer` is the
/// 0-d position operand's buffer, or null for the default Tk - Tq.
template <typename Op>
SmallVector<Value> attentionShapeArgs(OpBuilder &b, Op op, Value offsetBuffer) {
  Location loc = op.getLoc();
  auto q = op.getQuery().getType(), k = op.getKey().getType(),
       v = op.getValue().getType();
  Value offset =
      offsetBuffer
          ? b.create<arith::ExtSIOp>(loc, b.getI64Type(),
                                     loadScalar(b, loc, offsetBuffer))
                .getResult()
          : i64(b, loc, k.getDimSize(2) - q.getDimSize(2));
  return {i64(b, loc, q.getDimSize(0)), i64(b, loc, q.getDimSize(1)),
          i64(b, loc, k.getDimSize(1)), i64(b, loc, q.getDimSize(2)),
          i64(b, loc, k.getDimSize(2)), i64(b, loc, q.getDimSize(3)),
          i64(b, loc, v.getDimSize(3)), i32(b, loc, op.getCausal()), offset,
          f32(b, loc, op.getEffectiveScale())};
}

bool emitAttention(OpBuilder &b, AttentionOp op, ValueRange operands,
                   ValueRange results) {
  // (q, k, v, out, shapes...)
  SmallVector<Value> args;
  for (Value buffer : operands.take_front(3))
    args.push_back(pointerOf(b, op.getLoc(), buffer));
  args.push_back(pointerOf(b, op.getLoc(), results[0]));
  args.append(attentionShapeArgs(b, op, op.getOffset() ? operands[3] : Value()));
  call(b, op, "tfc_k_attention_f32", args);
  return true;
}

bool emitAttentionGrad(OpBuilder &b, AttentionGradOp op, ValueRange operands,
                       ValueRange results) {
  // (q, k, v, out, grad_out, dq, dk, dv, shapes...)
  SmallVector<Value> args;
  for (Value buffer : operands.take_front(5))
    args.push_back(pointerOf(b, op.getLoc(), buffer));
  for (Value buffer : results)
    args.push_back(pointerOf(b, op.getLoc(), buffer));
  args.append(attentionShapeArgs(b, op, op.getOffset() ? operands[5] : Value()));
  call(b, op, "tfc_k_attention_grad_f32", args);
  return true;
}

bool emitSample(OpBuilder &b, SampleOp op, ValueRange operands,
                ValueRange results) {
  Location loc = op.getLoc();
  auto logits = op.getLogits().getType();
  call(b, op, "tfc_k_sample_f32",
       {pointerOf(b, loc, operands[0]), i64(b, loc, logits.getDimSize(0)),
        i64(b, loc, logits.getDimSize(1)), loadScalar(b, loc, operands[1]),
        loadScalar(b, loc, operands[2]), loadScalar(b, loc, operands[3]),
        loadScalar(b, loc, operands[4]), pointerOf(b, loc, results[0])});
  return true;
}

/// A stack array of the buffers' addresses, for the kernels that take a
/// variable number of matrices (the experts of tfc.moe_ffn).
Value pointerArray(OpBuilder &b, Location loc, ValueRange buffers) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  Value array = b.create<LLVM::AllocaOp>(
      loc, ptr, ptr, i64(b, loc, (int64_t)buffers.size()), /*alignment=*/8);
  for (auto [i, buffer] : llvm::enumerate(buffers)) {
    Value slot = b.create<LLVM::GEPOp>(loc, ptr, ptr, array,
                                       ArrayRef<LLVM::GEPArg>{(int32_t)i});
    b.create<LLVM::StoreOp>(loc, pointerOf(b, loc, buffer), slot);
  }
  return array;
}

bool emitMoeRoute(OpBuilder &b, MoeRouteOp op, ValueRange operands,
                  ValueRange results) {
  Location loc = op.getLoc();
  auto logits = op.getLogits().getType();
  call(b, op, "tfc_k_moe_route_f32",
       {pointerOf(b, loc, operands[0]), i64(b, loc, logits.getDimSize(0)),
        i64(b, loc, logits.getDimSize(1)), i64(b, loc, op.getTopK()),
        pointerOf(b, loc, results[0])});
  return true;
}

/// N, D, F, E, k of a tfc.moe_ffn or tfc.moe_ffn_grad.
template <typename Op>
SmallVector<Value> moeShapeArgs(OpBuilder &b, Op op) {
  Location loc = op.getLoc();
  auto x = llvm::cast<RankedTensorType>(op.getX().getType());
  auto w1 = llvm::cast<RankedTensorType>(op.getExperts()[0].getType());
  return {i64(b, loc, x.getDimSize(0)), i64(b, loc, x.getDimSize(1)),
          i64(b, loc, w1.getDimSize(0)),
          i64(b, loc, (int64_t)op.getExperts().size() / 3),
          i64(b, loc, op.getIds().getType().getDimSize(1))};
}

bool emitMoeFfn(OpBuilder &b, MoeFfnOp op, ValueRange operands,
                ValueRange results) {
  Location loc = op.getLoc();
  SmallVector<Value> args = {pointerOf(b, loc, operands[0]),
                             pointerOf(b, loc, operands[1]),
                             pointerOf(b, loc, operands[2]),
                             pointerArray(b, loc, operands.drop_front(3)),
                             pointerOf(b, loc, results[0])};
  args.append(moeShapeArgs(b, op));
  call(b, op, "tfc_k_moe_ffn_f32", args);
  return true;
}

bool emitMoeFfnGrad(OpBuilder &b, MoeFfnGradOp op, ValueRange operands,
                    ValueRange results) {
  Location loc = op.getLoc();
  // (x, ids, weights, dy, experts[], dx, dweights, dexperts[], shapes...)
  SmallVector<Value> args;
  for (Value buffer : operands.take_front(4))
    args.push_back(pointerOf(b, loc, buffer));
  args.push_back(pointerArray(b, loc, operands.drop_front(4)));
  args.push_back(pointerOf(b, loc, results[0]));
  args.push_back(pointerOf(b, loc, results[1]));
  args.push_back(pointerArray(b, loc, results.drop_front(2)));
  args.append(moeShapeArgs(b, op));
  call(b, op, "tfc_k_moe_ffn_grad_f32", args);
  return true;
}

} // namespace

void emitLinearCall(OpBuilder &b, Operation *op, Value x, Value weight,
                    Value bias, Value residual, Value y, bool transposeWeight,
                    LinearActivation activation) {
  Location loc = op->getLoc();
  if (llvm::any_of(ValueRange{x, weight, y}, isHalf) ||
      (bias && isHalf(bias)) || (residual && isHalf(residual))) {
    SmallVector<Value> operands = {x, weight};
    for (Value v : {bias, residual})
      if (v)
        operands.push_back(v);
    emitInF32(b, loc, operands, y, [&](ValueRange in, ValueRange out) {
      emitLinearCall(b, op, in[0], in[1], bias ? in[2] : Value(),
                     residual ? in[bias ? 3 : 2] : Value(), out[0],
                     transposeWeight, activation);
    });
    return;
  }
  auto outShape = llvm::cast<MemRefType>(y.getType()).getShape();
  int64_t n = outShape.back();
  int64_t m = numElements(outShape) / n;
  int64_t k = llvm::cast<MemRefType>(x.getType()).getShape().back();
  auto orNull = [&](Value v) -> Value {
    if (v)
      return pointerOf(b, loc, v);
    return b.create<LLVM::ZeroOp>(loc,
                                  LLVM::LLVMPointerType::get(b.getContext()));
  };
  call(b, op, "tfc_k_linear_ex_f32",
       {pointerOf(b, loc, x), pointerOf(b, loc, weight), orNull(bias),
        orNull(residual), pointerOf(b, loc, y), i64(b, loc, m), i64(b, loc, n),
        i64(b, loc, k), i32(b, loc, transposeWeight),
        i32(b, loc, static_cast<int32_t>(activation))});
}

FailureOr<bool> emitLibraryKernel(OpBuilder &b, Operation *op,
                                  ValueRange operands, ValueRange results) {
  if (!llvm::isa<MatmulOp, LinearOp, AttentionOp, AttentionGradOp, SampleOp,
                 MoeRouteOp, MoeFfnOp, MoeFfnGradOp>(op))
    return failure();
  if (auto linear = llvm::dyn_cast<LinearOp>(op))
    return emitLinear(b, linear, operands, results); // converts in the call
  bool emitted = false;
  emitInF32(
      b, op->getLoc(), operands, results, [&](ValueRange ins, ValueRange outs) {
        emitted =
            llvm::TypeSwitch<Operation *, bool>(op)
                .Case([&](MatmulOp m) { return emitMatmul(b, m, ins, outs); })
                .Case([&](AttentionOp a) {
                  return emitAttention(b, a, ins, outs);
                })
                .Case([&](AttentionGradOp a) {
                  return emitAttentionGrad(b, a, ins, outs);
                })
                .Case([&](SampleOp s) { return emitSample(b, s, ins, outs); })
                .Case([&](MoeRouteOp r) {
                  return emitMoeRoute(b, r, ins, outs);
                })
                .Case([&](MoeFfnOp m) { return emitMoeFfn(b, m, ins, outs); })
                .Case([&](MoeFfnGradOp m) {
                  return emitMoeFfnGrad(b, m, ins, outs);
                })
                .Default([](Operation *) { return false; });
      });
  return emitted;
}

} // namespace tfc::cpu
