//===- LibraryKernels.cpp - ops computed by the hand-written kernels ------===//
//
// matmul, linear, attention, sample and the mixture-of-experts ops call
// codegen/cpu/kernels (packed, register-blocked, multi-threaded code). The
// emitters only compute sizes and strides and pass pointers. The library
// computes in f32. A 16-bit B operand of a product (the weight of linear, the
// rhs of matmul) goes to it as is, with its element type (tfc_k_*_bx_f32), and
// is widened as the library reads it: at decode the weights are read once at
// half the bytes. Other 16-bit operands and results are widened into f32
// buffers around the call and the results rounded once (emitInF32):
// activations, O(M x K), small beside the weights at small M, linear in size
// beside the product's work at large M.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/KernelEmitters.h"

#include "dialects/tfc/TfcOps.h"
#include "tfc/artifact_abi.h"

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

/// The library's code for a B operand's element type (TFC_K_F32, TFC_K_BF16,
/// TFC_K_F16 in codegen/cpu/kernels/tfc_kernels.h).
int32_t libraryElementType(Value buffer) {
  Type t = llvm::cast<MemRefType>(buffer.getType()).getElementType();
  return t.isBF16() ? 1 : t.isF16() ? 2 : 0;
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
/// product's work at large M, but at decode (M = 1) widened weights and their
/// allocation would cost more than the product itself (gpt2-124m decoded 3.4x
/// slower in bf16 than in f32 that way), so products pass their B operand
/// around this (libraryElementType).
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
  // result's, 0 when it has a single matrix. The rhs may also repeat with a
  // period (the library's period_b): its batch dims equal the result's
  // trailing ones and it broadcasts over the leading ones, as a weight per
  // head [H, K, N] against [B, H, M, K]. Other broadcasts are materialized.
  int64_t periodB = 0;
  auto strideFor = [&](Value &v, bool periodic) -> int64_t {
    auto shape = llvm::cast<MemRefType>(v.getType()).getShape();
    int64_t matrix = shape[shape.size() - 2] * shape.back();
    int64_t count = numElements(shape.drop_back(2));
    if (count == 1)
      return batchCount == 1 ? matrix : 0;
    SmallVector<int64_t> padded(batch.size() - (shape.size() - 2), 1);
    padded.append(shape.begin(), shape.end() - 2);
    if (llvm::ArrayRef<int64_t>(padded) == batch)
      return matrix;
    size_t lead = 0;
    while (lead < padded.size() && padded[lead] == 1)
      ++lead;
    if (periodic &&
        llvm::ArrayRef<int64_t>(padded).drop_front(lead) ==
            batch.drop_front(lead)) {
      periodB = count;
      return matrix;
    }
    v = materializeBatch(b, loc, v, batch);
    temporaries.push_back(v);
    return matrix;
  };
  Value lhs = operands[0], rhs = operands[1];
  int64_t strideA = strideFor(lhs, false), strideB = strideFor(rhs, true);
  // f32 calls without a period stay the f32 entry point (the same code as
  // before 16-bit B).
  int32_t rhsType = libraryElementType(rhs);
  bool general = rhsType != 0 || periodB != 0;
  SmallVector<Value> args = {pointerOf(b, loc, lhs), pointerOf(b, loc, rhs)};
  if (general)
    args.push_back(i32(b, loc, rhsType));
  args.append({pointerOf(b, loc, results[0]), i64(b, loc, batchCount),
               i64(b, loc, m), i64(b, loc, n), i64(b, loc, k),
               i32(b, loc, op.getTransposeLhs()),
               i32(b, loc, op.getTransposeRhs()), i64(b, loc, strideA),
               i64(b, loc, strideB)});
  if (general)
    args.push_back(i64(b, loc, periodB));
  args.append({i64(b, loc, m * n), i32(b, loc, 0)});
  call(b, op, general ? "tfc_k_matmul_bx_f32" : "tfc_k_matmul_f32", args);
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

/// kvType: the library's code for K's and V's element type (0: f32).
bool emitAttention(OpBuilder &b, AttentionOp op, ValueRange operands,
                   ValueRange results, int32_t kvType = 0) {
  // (q, k, v, [kv type,] out, shapes...)
  SmallVector<Value> args;
  for (Value buffer : operands.take_front(3))
    args.push_back(pointerOf(b, op.getLoc(), buffer));
  if (kvType != 0)
    args.push_back(i32(b, op.getLoc(), kvType));
  args.push_back(pointerOf(b, op.getLoc(), results[0]));
  if (op.getOffset() && op.getOffset().getType().getRank() == 1) {
    // One offset per row (causal by the verifier): (q, k, v, kv type, out,
    // sizes, row offsets, scale).
    if (kvType == 0)
      args.insert(args.begin() + 3, i32(b, op.getLoc(), kvType));
    SmallVector<Value> shape = attentionShapeArgs(b, op, Value());
    args.append(shape.begin(), shape.begin() + 7);
    args.push_back(pointerOf(b, op.getLoc(), operands[3]));
    args.push_back(shape.back());
    call(b, op, "tfc_k_attention_rows_f32", args);
    return true;
  }
  args.append(attentionShapeArgs(b, op, op.getOffset() ? operands[3] : Value()));
  call(b, op, kvType ? "tfc_k_attention_kvx_f32" : "tfc_k_attention_f32",
       args);
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

/// N, D, F, the experts held, k, all the experts and the first held of a
/// tfc.moe_ffn or tfc.moe_ffn_grad.
template <typename Op>
SmallVector<Value> moeShapeArgs(OpBuilder &b, Op op) {
  Location loc = op.getLoc();
  auto x = llvm::cast<RankedTensorType>(op.getX().getType());
  auto w1 = llvm::cast<RankedTensorType>(op.getExperts()[0].getType());
  auto weights = llvm::cast<RankedTensorType>(op.getWeights().getType());
  return {i64(b, loc, x.getDimSize(0)), i64(b, loc, x.getDimSize(1)),
          i64(b, loc, w1.getDimSize(0)),
          i64(b, loc, (int64_t)op.getExperts().size() / 3),
          i64(b, loc, op.getIds().getType().getDimSize(1)),
          i64(b, loc, weights.getDimSize(1)),
          i64(b, loc, static_cast<int64_t>(op.getFirstExpert()))};
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

/// The address of a NUL-terminated global holding the group's name.
Value groupName(OpBuilder &b, Operation *op, StringRef groupText) {
  auto module = op->getParentOfType<ModuleOp>();
  std::string name = "tfc_group_" + groupText.str();
  auto global = module.lookupSymbol<LLVM::GlobalOp>(name);
  if (!global) {
    OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
    std::string text = groupText.str();
    text.push_back('\0');
    global = mb.create<LLVM::GlobalOp>(
        module.getLoc(), LLVM::LLVMArrayType::get(b.getI8Type(), text.size()),
        /*isConstant=*/true, LLVM::Linkage::Internal, name,
        b.getStringAttr(text), /*alignment=*/0);
  }
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  return b.create<LLVM::AddressOfOp>(op->getLoc(), ptr, global.getSymName());
}

/// tfc.all_reduce, tfc.reduce_scatter, tfc.all_gather and tfc.all_to_all: a
/// blocking call into the runtime's communicator through the kernel library
/// (tfc_kernels_collective_f32 -> host->collective), with the count the ABI
/// states for the kind (artifact_abi.h: the per-rank block for the last
/// three).
bool emitCollective(OpBuilder &b, Operation *op, int32_t kind,
                    StringRef group, StringRef reduce, ValueRange operands,
                    ValueRange results) {
  Location loc = op->getLoc();
  auto blockOf = [](Value v) {
    return numElements(llvm::cast<ShapedType>(v.getType()).getShape());
  };
  // all_to_all: the block each rank sends to each other one.
  int64_t count = kind == TFC_COLLECTIVE_ALL_GATHER ? blockOf(operands[0])
                  : kind == TFC_COLLECTIVE_ALL_TO_ALL
                      ? blockOf(operands[0]) /
                            llvm::cast<AllToAllOp>(op).getSize()
                      : blockOf(results[0]);
  call(b, op, "tfc_kernels_collective_f32",
       {i32(b, loc, kind),
        i32(b, loc, reduce == "mean" ? TFC_REDUCE_MEAN : TFC_REDUCE_SUM),
        groupName(b, op, group), pointerOf(b, loc, operands[0]),
        pointerOf(b, loc, results[0]), i64(b, loc, count)});
  return true;
}

/// A stack array of the buffers' element counts (int64), next to
/// pointerArray's addresses.
Value countArray(OpBuilder &b, Location loc, ValueRange buffers) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  Value array = b.create<LLVM::AllocaOp>(
      loc, ptr, b.getI64Type(), i64(b, loc, (int64_t)buffers.size()),
      /*alignment=*/8);
  for (auto [i, buffer] : llvm::enumerate(buffers)) {
    Value slot = b.create<LLVM::GEPOp>(loc, ptr, b.getI64Type(), array,
                                       ArrayRef<LLVM::GEPArg>{(int32_t)i});
    int64_t count =
        numElements(llvm::cast<MemRefType>(buffer.getType()).getShape());
    b.create<LLVM::StoreOp>(loc, i64(b, loc, count), slot);
  }
  return array;
}

/// tfc.all_reduce_start: hands the bucket to the runtime, which copies it
/// into one flat buffer and starts the collective
/// (tfc_kernels_collective_start_f32 -> host->collective_start); returns at
/// once. The results are written by the matching wait.
bool emitAllReduceStart(OpBuilder &b, AllReduceStartOp op, ValueRange operands,
                        ValueRange) {
  Location loc = op.getLoc();
  call(b, op, "tfc_kernels_collective_start_f32",
       {i32(b, loc, TFC_COLLECTIVE_ALL_REDUCE),
        i32(b, loc, op.getReduce() == "mean" ? TFC_REDUCE_MEAN : TFC_REDUCE_SUM),
        groupName(b, op, op.getGroup()), i64(b, loc, op.getBucket()),
        i32(b, loc, (int32_t)operands.size()), pointerArray(b, loc, operands),
        countArray(b, loc, operands)});
  return true;
}

/// tfc.all_reduce_wait: blocks until the bucket's collective is done and
/// copies the reduced values into the results.
bool emitAllReduceWait(OpBuilder &b, AllReduceWaitOp op, ValueRange,
                       ValueRange results) {
  Location loc = op.getLoc();
  call(b, op, "tfc_kernels_collective_wait_f32",
       {i64(b, loc, op.getBucket()), i32(b, loc, (int32_t)results.size()),
        pointerArray(b, loc, results), countArray(b, loc, results)});
  return true;
}

/// tfc.send and tfc.recv: the bytes of the buffer to or from a peer through
/// the runtime's communicator (tfc_kernels_p2p -> host->p2p); a send returns
/// once the host copied them, a receive once they arrived.
bool emitPointToPoint(OpBuilder &b, Operation *op, int32_t kind,
                      StringRef group, int64_t peer, int64_t tag, Value buffer) {
  Location loc = op->getLoc();
  auto type = llvm::cast<MemRefType>(buffer.getType());
  int64_t bytes =
      numElements(type.getShape()) * (type.getElementTypeBitWidth() / 8);
  call(b, op, "tfc_kernels_p2p",
       {i32(b, loc, kind), groupName(b, op, group), i32(b, loc, (int32_t)peer),
        i64(b, loc, tag), pointerOf(b, loc, buffer), i64(b, loc, bytes)});
  return true;
}

} // namespace

void emitLinearCall(OpBuilder &b, Operation *op, Value x, Value weight,
                    Value bias, Value residual, Value y, bool transposeWeight,
                    LinearActivation activation, float activationParam) {
  Location loc = op->getLoc();
  // The weight is passed as is (16-bit: tfc_k_linear_ex_bx_f32).
  if (llvm::any_of(ValueRange{x, y}, isHalf) || (bias && isHalf(bias)) ||
      (residual && isHalf(residual))) {
    SmallVector<Value> operands = {x};
    for (Value v : {bias, residual})
      if (v)
        operands.push_back(v);
    emitInF32(b, loc, operands, y, [&](ValueRange in, ValueRange out) {
      emitLinearCall(b, op, in[0], weight, bias ? in[1] : Value(),
                     residual ? in[bias ? 2 : 1] : Value(), out[0],
                     transposeWeight, activation, activationParam);
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
  int32_t weightType = libraryElementType(weight);
  SmallVector<Value> args = {pointerOf(b, loc, x), pointerOf(b, loc, weight)};
  if (weightType != 0)
    args.push_back(i32(b, loc, weightType));
  args.append({orNull(bias), orNull(residual), pointerOf(b, loc, y),
               i64(b, loc, m), i64(b, loc, n), i64(b, loc, k),
               i32(b, loc, transposeWeight),
               i32(b, loc, static_cast<int32_t>(activation)),
               f32(b, loc, activationParam)});
  call(b, op, weightType ? "tfc_k_linear_ex_bx_f32" : "tfc_k_linear_ex_f32",
       args);
}

/// tfc.paged_attention on f32 query and result buffers; the pools are passed
/// as they are (kvType: their element type's library code).
static void emitPagedAttention(OpBuilder &b, PagedAttentionOp op, Value query,
                               Value keyPool, Value valuePool, Value blocks,
                               Value position, Value out) {
  Location loc = op.getLoc();
  auto q = op.getQuery().getType().getShape();
  auto pool = op.getKeyPool().getType().getShape();
  call(b, op, "tfc_k_attention_paged_f32",
       {pointerOf(b, loc, query), pointerOf(b, loc, keyPool),
        pointerOf(b, loc, valuePool), i32(b, loc, libraryElementType(keyPool)),
        pointerOf(b, loc, out), i64(b, loc, q[0]), i64(b, loc, q[1]),
        i64(b, loc, pool[1]), i64(b, loc, q[2]), i64(b, loc, q[3]),
        i64(b, loc, op.getValuePool().getType().getDimSize(3)),
        i64(b, loc, pool[0]), i64(b, loc, pool[2]), pointerOf(b, loc, blocks),
        i64(b, loc, op.getBlocks().getType().getDimSize(1)),
        pointerOf(b, loc, position), f32(b, loc, op.getEffectiveScale())});
}

void emitPagedKvWrite(OpBuilder &b, Operation *op, Value update,
                      Value position, Value blocks, Value dest) {
  Location loc = op->getLoc();
  auto u = llvm::cast<MemRefType>(update.getType());
  auto pool = llvm::cast<MemRefType>(dest.getType()).getShape();
  call(b, op, "tfc_k_paged_kv_write",
       {pointerOf(b, loc, dest), pointerOf(b, loc, update),
        i64(b, loc, isHalf(update) ? 2 : 4), i64(b, loc, u.getDimSize(0)),
        i64(b, loc, u.getDimSize(1)), i64(b, loc, u.getDimSize(2)),
        i64(b, loc, u.getDimSize(3)), i64(b, loc, pool[0]),
        i64(b, loc, pool[2]), pointerOf(b, loc, blocks),
        i64(b, loc, llvm::cast<MemRefType>(blocks.getType()).getDimSize(1)),
        pointerOf(b, loc, position)});
}

FailureOr<bool> emitLibraryKernel(OpBuilder &b, Operation *op,
                                  ValueRange operands, ValueRange results) {
  if (auto paged = llvm::dyn_cast<PagedAttentionOp>(op)) {
    // The pools (the KV cache, maybe 16-bit) are read in place.
    emitInF32(b, op->getLoc(), {operands[0], operands[3], operands[4]},
              results, [&](ValueRange ins, ValueRange outs) {
                emitPagedAttention(b, paged, ins[0], operands[1], operands[2],
                                   ins[1], ins[2], outs[0]);
              });
    return true;
  }
  if (!llvm::isa<MatmulOp, LinearOp, AttentionOp, AttentionGradOp, SampleOp,
                 MoeRouteOp, MoeFfnOp, MoeFfnGradOp, AllReduceOp,
                 ReduceScatterOp, AllGatherOp, AllToAllOp, AllReduceStartOp,
                 AllReduceWaitOp, SendOp, RecvOp>(op))
    return failure();
  // Any element type: bytes.
  if (auto send = llvm::dyn_cast<SendOp>(op))
    return emitPointToPoint(b, op, TFC_P2P_SEND, send.getGroup(),
                            send.getPeer(), send.getTag(), operands[0]);
  if (auto recv = llvm::dyn_cast<RecvOp>(op))
    return emitPointToPoint(b, op, TFC_P2P_RECV, recv.getGroup(),
                            recv.getPeer(), recv.getTag(), results[0]);
  // f32 only (the ops' operand types): the buffers are passed as they are.
  if (auto start = llvm::dyn_cast<AllReduceStartOp>(op))
    return emitAllReduceStart(b, start, operands, results);
  if (auto wait = llvm::dyn_cast<AllReduceWaitOp>(op))
    return emitAllReduceWait(b, wait, operands, results);
  if (auto linear = llvm::dyn_cast<LinearOp>(op))
    return emitLinear(b, linear, operands, results); // converts in the call
  if (auto matmul = llvm::dyn_cast<MatmulOp>(op)) {
    // The rhs is passed as is (16-bit: tfc_k_matmul_bx_f32).
    bool emitted = false;
    emitInF32(b, op->getLoc(), operands.take_front(1), results,
              [&](ValueRange ins, ValueRange outs) {
                emitted = emitMatmul(b, matmul, {ins[0], operands[1]}, outs);
              });
    return emitted;
  }
  if (auto attention = llvm::dyn_cast<AttentionOp>(op)) {
    // A 16-bit K and V (the KV cache) are passed as is: decode reads the
    // visible cache once, instead of widening all of it every token.
    Value k = operands[1], v = operands[2];
    int32_t kvType = libraryElementType(k);
    if (kvType != 0 && libraryElementType(v) == kvType) {
      SmallVector<Value> widened = {operands[0]};
      llvm::append_range(widened, operands.drop_front(3));
      emitInF32(b, op->getLoc(), widened, results,
                [&](ValueRange ins, ValueRange outs) {
                  SmallVector<Value> all = {ins[0], k, v};
                  llvm::append_range(all, ins.drop_front(1));
                  emitAttention(b, attention, all, outs, kvType);
                });
      return true;
    }
  }
  bool emitted = false;
  emitInF32(
      b, op->getLoc(), operands, results, [&](ValueRange ins, ValueRange outs) {
        emitted =
            llvm::TypeSwitch<Operation *, bool>(op)
                .Case([&](AttentionOp a) {
                  return emitAttention(b, a, ins, outs);
                })
                .Case([&](AttentionGradOp a) {
                  return emitAttentionGrad(b, a, ins, outs);
                })
                .Case([&](SampleOp s) { return emitSample(b, s, ins, outs); })
                .Case(
                    [&](MoeRouteOp r) { return emitMoeRoute(b, r, ins, outs); })
                .Case([&](MoeFfnOp m) { return emitMoeFfn(b, m, ins, outs); })
                .Case([&](MoeFfnGradOp m) {
                  return emitMoeFfnGrad(b, m, ins, outs);
                })
                .Case([&](AllReduceOp r) {
                  return emitCollective(b, r, TFC_COLLECTIVE_ALL_REDUCE,
                                        r.getGroup(), r.getReduce(), ins, outs);
                })
                .Case([&](ReduceScatterOp r) {
                  return emitCollective(b, r, TFC_COLLECTIVE_REDUCE_SCATTER,
                                        r.getGroup(), r.getReduce(), ins, outs);
                })
                .Case([&](AllGatherOp r) {
                  return emitCollective(b, r, TFC_COLLECTIVE_ALL_GATHER,
                                        r.getGroup(), "sum", ins, outs);
                })
                .Case([&](AllToAllOp r) {
                  return emitCollective(b, r, TFC_COLLECTIVE_ALL_TO_ALL,
                                        r.getGroup(), "sum", ins, outs);
                })
                .Default([](Operation *) { return false; });
      });
  return emitted;
}

} // namespace tfc::cpu
