//===- FusedKernels.cpp - one kernel for a tfc.fused group ----------------===//
//
// A fused group runs its whole body per element: operands are loaded once
// (broadcast into the iteration space), every op of the body becomes scalar
// arithmetic in registers, and only the group's results are stored.
//   pointwise: one linalg.generic writing every result in the same loop;
//   reduction: the reduction's loop nest, whose innermost body evaluates the
//              pointwise prologue instead of loading a materialized input;
//   row:       per row, the prologue into the result row, then the norm or
//              softmax on it in place while it is in cache;
//   linear:    one call of the kernel library with its epilogue.
// 16-bit floats compute in f32 throughout the body and round once at the
// store (one rounding instead of one per op).
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/KernelEmitters.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace tfc::cpu {
namespace {

/// The indices of an operand of `shape` broadcast into an iteration space
/// indexed by `indices` (NumPy: aligned from the right, size 1 reads 0).
SmallVector<Value> broadcastIndices(OpBuilder &b, Location loc,
                                    ArrayRef<int64_t> shape,
                                    ArrayRef<int64_t> space,
                                    ValueRange indices) {
  SmallVector<Value> out;
  size_t lead = space.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    out.push_back(shape[d] == 1 && space[lead + d] != 1
                      ? indexConst(b, loc, 0)
                      : indices[lead + d]);
  return out;
}

LogicalResult emitPointwiseGroup(OpBuilder &b, FusedOp op, ValueRange operands,
                                 ValueRange results) {
  Location loc = op.getLoc();
  Block &body = op.getBody().front();
  ArrayRef<int64_t> space = shapeOf(results[0]);
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value in : operands)
    maps.push_back(broadcastMap(ctx, shapeOf(in), space));
  for (size_t i = 0; i < results.size(); ++i)
    maps.push_back(AffineMap::getMultiDimIdentityMap(space.size(), ctx));
  SmallVector<utils::IteratorType> iterators(space.size(),
                                             utils::IteratorType::parallel);
  LogicalResult status = success();
  b.create<linalg::GenericOp>(
      loc, operands, results, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        DenseMap<Value, Value> env;
        for (auto [arg, scalar] : llvm::zip(body.getArguments(), args))
          env[arg] = widen(nb, nloc, scalar);
        status = evaluateBody(nb, nloc, body, nullptr, env);
        SmallVector<Value> stored;
        auto yield = llvm::cast<YieldOp>(body.getTerminator());
        for (auto [v, out] : llvm::zip(yield.getValues(),
                                       args.drop_front(operands.size()))) {
          stored.push_back(narrow(nb, nloc, env.lookup(v), out.getType()));
        }
        nb.create<linalg::YieldOp>(nloc, stored);
      });
  return status;
}

LogicalResult emitReductionGroup(OpBuilder &b, FusedOp op, ValueRange operands,
                                 ValueRange results) {
  Location loc = op.getLoc();
  Block &body = op.getBody().front();
  Operation *reduce = body.getTerminator()->getOperand(0).getDefiningOp();
  Value input = reduce ? reduce->getOperand(0) : Value();
  if (!reduce || results.size() != 1)
    return op.emitError("CPU codegen: a fused reduction yields one reduced "
                        "value");
  ReduceKind kind;
  ArrayRef<int64_t> dims;
  bool keepdim;
  if (auto r = llvm::dyn_cast<ReduceSumOp>(reduce)) {
    kind = ReduceKind::Sum, dims = r.getDims(), keepdim = r.getKeepdim();
  } else if (auto r = llvm::dyn_cast<ReduceMeanOp>(reduce)) {
    kind = ReduceKind::Mean, dims = r.getDims(), keepdim = r.getKeepdim();
  } else if (auto r = llvm::dyn_cast<ReduceMaxOp>(reduce)) {
    kind = ReduceKind::Max, dims = r.getDims(), keepdim = r.getKeepdim();
  } else {
    return op.emitError("CPU codegen: a fused reduction ends with "
                        "reduce_sum, reduce_mean or reduce_max");
  }
  auto inputType = llvm::cast<RankedTensorType>(input.getType());
  ArrayRef<int64_t> space = inputType.getShape();
  LogicalResult status = success();
  emitReduceLoops(
      b, loc, kind, dims, keepdim, space, inputType.getElementType(),
      [&](OpBuilder &nb, Location nloc, ValueRange indices) -> Value {
        DenseMap<Value, Value> env;
        for (auto [arg, buffer] : llvm::zip(body.getArguments(), operands)) {
          if (arg.use_empty())
            continue;
          auto idx = broadcastIndices(nb, nloc, shapeOf(buffer), space, indices);
          env[arg] = widen(nb, nloc,
                           nb.create<memref::LoadOp>(nloc, buffer, idx));
        }
        if (failed(evaluateBody(nb, nloc, body, reduce, env)))
          status = failure();
        return env.lookup(input);
      },
      results[0]);
  return status;
}

/// A pointwise prologue, then layer_norm, rms_norm, softmax or log_softmax
/// over the last dimension: per row, the prologue is evaluated element by
/// element and written into the row of the result (and into the kernel's
/// other results, the prologue values read elsewhere, e.g. the residual
/// stream), then the row op runs on that row in place while it is in cache.
/// Operands are rows of the iteration shape, vectors along the row, or
/// scalars (the verifier checks).
LogicalResult emitRowGroup(OpBuilder &b, FusedOp op, ValueRange operands,
                           ValueRange results) {
  Location loc = op.getLoc();
  Block &body = op.getBody().front();
  auto yield = llvm::cast<YieldOp>(body.getTerminator());
  Operation *row = yield->getPrevNode();
  Value input = row->getOperand(0);
  ArrayRef<int64_t> space = llvm::cast<RankedTensorType>(input.getType())
                                .getShape();
  int64_t n = space.back();
  auto bufferOf = [&](Value v) -> Value {
    auto arg = llvm::dyn_cast_or_null<BlockArgument>(v);
    return arg ? operands[arg.getArgNumber()] : Value();
  };
  Value weight, bias;
  if (auto ln = llvm::dyn_cast<LayerNormOp>(row)) {
    weight = bufferOf(ln.getWeight());
    bias = bufferOf(ln.getBias());
  } else if (auto rn = llvm::dyn_cast<RmsNormOp>(row)) {
    weight = bufferOf(rn.getWeight());
  }
  unsigned rowResult =
      llvm::find(yield.getValues(), row->getResult(0)) - yield.getValues().begin();
  SmallVector<Value> flatOperands, flatResults;
  for (Value v : operands)
    flatOperands.push_back(flatten(b, loc, v));
  for (Value v : results)
    flatResults.push_back(flatten(b, loc, v));
  LogicalResult status = success();
  forEachLine(b, loc, splitAtDim(space, space.size() - 1),
              [&](OpBuilder &b, Location loc, Value base) {
    forRange(b, loc, n, [&](OpBuilder &b, Location l, Value j) {
      DenseMap<Value, Value> env;
      Value flat = b.create<arith::AddIOp>(l, base, j);
      for (BlockArgument arg : body.getArguments()) {
        if (llvm::all_of(arg.getUsers(),
                         [&](Operation *u) { return u == row; }))
          continue; // The norm's weight and bias, read by the row op.
        auto type = llvm::cast<RankedTensorType>(arg.getType());
        Value index = type.getShape() == space ? flat
                      : type.getNumElements() == n ? j
                                                    : indexConst(b, l, 0);
        env[arg] = widen(b, l,
                         b.create<memref::LoadOp>(
                             l, flatOperands[arg.getArgNumber()], index));
      }
      if (failed(evaluateBody(b, l, body, row, env)))
        status = failure();
      for (auto [i, v] : llvm::enumerate(yield.getValues())) {
        Value scalar = env.lookup(i == rowResult ? input : v);
        b.create<memref::StoreOp>(
            l, narrow(b, l, scalar, elementTypeOf(flatResults[i])),
            flatResults[i], flat);
      }
    });
    if (failed(emitRowOpInPlace(b, row, flatResults[rowResult], base, n,
                                weight, bias)))
      status = failure();
  });
  return status;
}

/// linear [-> gelu | relu | silu | leaky_relu] [-> add residual]: one call of
/// the kernel library, whose epilogue applies the activation and the residual
/// to each output tile while it is in cache.
LogicalResult emitLinearGroup(OpBuilder &b, FusedOp op, ValueRange operands,
                              ValueRange results) {
  Block &body = op.getBody().front();
  auto bufferOf = [&](Value v) -> Value {
    auto arg = llvm::dyn_cast<BlockArgument>(v);
    return arg ? operands[arg.getArgNumber()] : Value();
  };
  LinearOp linear;
  LinearActivation activation = LinearActivation::None;
  float activationParam = 0.f;
  Value chain, residual;
  for (Operation &inner : body.without_terminator()) {
    if (auto l = llvm::dyn_cast<LinearOp>(inner)) {
      linear = l;
      chain = l.getResult();
    } else if (auto g = llvm::dyn_cast<GeluOp>(inner);
               g && g.getApproximate() == GeluApproximation::Tanh) {
      activation = LinearActivation::GeluTanh, chain = g.getResult();
    } else if (llvm::isa<ReluOp>(inner)) {
      activation = LinearActivation::Relu, chain = inner.getResult(0);
    } else if (llvm::isa<SiluOp>(inner)) {
      activation = LinearActivation::Silu, chain = inner.getResult(0);
    } else if (auto leaky = llvm::dyn_cast<LeakyReluOp>(inner)) {
      activation = LinearActivation::LeakyRelu, chain = leaky.getResult();
      activationParam = leaky.getAlpha().convertToFloat();
    } else if (auto add = llvm::dyn_cast<AddOp>(inner)) {
      residual = bufferOf(add.getLhs() == chain ? add.getRhs() : add.getLhs());
      chain = add.getResult();
    } else {
      return op.emitError("CPU codegen: '")
             << inner.getName() << "' is not a linear epilogue";
    }
  }
  if (!linear || !bufferOf(linear.getX()) || !bufferOf(linear.getWeight()))
    return op.emitError("CPU codegen: a fused linear starts with tfc.linear "
                        "on the kernel's operands");
  emitLinearCall(b, op, bufferOf(linear.getX()), bufferOf(linear.getWeight()),
                 linear.getBias() ? bufferOf(linear.getBias()) : Value(),
                 residual, results[0], linear.getTransposeWeight(), activation,
                 activationParam);
  return success();
}

} // namespace

FailureOr<bool> emitFusedKernel(OpBuilder &b, Operation *op,
                                ValueRange operands, ValueRange results) {
  auto fused = llvm::dyn_cast<FusedOp>(op);
  if (!fused)
    return failure();
  if (fused.getKind() == "pointwise")
    return succeeded(emitPointwiseGroup(b, fused, operands, results));
  if (fused.getKind() == "linear")
    return succeeded(emitLinearGroup(b, fused, operands, results));
  if (fused.getKind() == "row")
    return succeeded(emitRowGroup(b, fused, operands, results));
  return succeeded(emitReductionGroup(b, fused, operands, results));
}

} // namespace tfc::cpu
