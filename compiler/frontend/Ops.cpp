//===- Ops.cpp - the tracing frontend: one function per tfc op ------------===//
#include "compiler/frontend/Ops.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;

namespace tfc::frontend {
namespace {

/// The graph all of `tensors` belong to; throws for a mix or an empty Tensor.
Graph &graphOf(std::initializer_list<Tensor> tensors) {
  Graph *graph = nullptr;
  for (const Tensor &t : tensors) {
    Graph *g = &t.graph();
    if (graph && g != graph)
      throw TraceError("tensors from two different graphs used in one op");
    graph = g;
  }
  return *graph;
}

Builder attrs(Graph &g) { return Builder(g.context()); }

SmallVector<Value> valuesOf(ArrayRef<Tensor> tensors) {
  SmallVector<Value> values;
  for (const Tensor &t : tensors)
    values.push_back(t.value());
  return values;
}

template <typename OpTy>
Tensor binary(Tensor a, Tensor b) {
  return graphOf({a, b}).infer<OpTy>({a.value(), b.value()});
}

template <typename OpTy>
Tensor unary(Tensor x) {
  return x.graph().create<OpTy>(x.type(), x.value());
}

template <typename OpTy>
Tensor reduce(Tensor x, ArrayRef<int64_t> dims, bool keepdim) {
  Graph &g = x.graph();
  Builder b = attrs(g);
  SmallVector<NamedAttribute> list = {
      b.getNamedAttr("dims", b.getDenseI64ArrayAttr(dims))};
  if (keepdim)
    list.push_back(b.getNamedAttr("keepdim", b.getUnitAttr()));
  return g.infer<OpTy>(x.value(), list);
}

} // namespace

//===----------------------------------------------------------------------===//
// Constants and indices
//===----------------------------------------------------------------------===//

Tensor constant(Graph &g, ArrayRef<int64_t> shape, DType dtype,
                ArrayRef<double> values) {
  RankedTensorType type = g.tensorType(shape, dtype);
  if ((int64_t)values.size() != numElements(shape))
    throw TraceError("constant of shape " + formatShape(shape) + " needs " +
                     std::to_string(numElements(shape)) + " values, got " +
                     std::to_string(values.size()));
  DenseElementsAttr value;
  if (auto floatType = llvm::dyn_cast<FloatType>(type.getElementType())) {
    SmallVector<APFloat> floats;
    for (double v : values) {
      APFloat f(v);
      bool losesInfo;
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      floats.push_back(f);
    }
    value = DenseElementsAttr::get(type, floats);
  } else {
    unsigned width = type.getElementTypeBitWidth();
    SmallVector<APInt> ints;
    for (double v : values) {
      if (v != std::trunc(v) || std::fabs(v) > 9.0e15)
        throw TraceError("constant value " + std::to_string(v) +
                         " is not an integer but the constant is " +
                         dtypeName(dtype));
      ints.push_back(APInt(width, (int64_t)v, /*isSigned=*/true));
    }
    value = DenseElementsAttr::get(type, ints);
  }
  return g.infer<ConstantOp>({}, {attrs(g).getNamedAttr("value", value)});
}

Tensor scalar(Graph &g, double value, DType dtype) {
  return constant(g, {}, dtype, {value});
}

Tensor scalarLike(Tensor like, double value) {
  return scalar(like.graph(), value, like.dtype());
}

Tensor iota(Graph &g, ArrayRef<int64_t> shape, DType dtype, int64_t dim) {
  return g.create<IotaOp>(g.tensorType(shape, dtype), {},
                          {attrs(g).getNamedAttr(
                              "dim", attrs(g).getI64IntegerAttr(dim))});
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Tensor add(Tensor a, Tensor b) { return binary<AddOp>(a, b); }
Tensor sub(Tensor a, Tensor b) { return binary<SubOp>(a, b); }
Tensor mul(Tensor a, Tensor b) { return binary<MulOp>(a, b); }
Tensor div(Tensor a, Tensor b) { return binary<DivOp>(a, b); }
Tensor maximum(Tensor a, Tensor b) { return binary<MaxOp>(a, b); }
Tensor minimum(Tensor a, Tensor b) { return binary<MinOp>(a, b); }
Tensor pow(Tensor a, Tensor b) { return binary<PowOp>(a, b); }
Tensor neg(Tensor x) { return unary<NegOp>(x); }
Tensor exp(Tensor x) { return unary<ExpOp>(x); }
Tensor log(Tensor x) { return unary<LogOp>(x); }
Tensor sqrt(Tensor x) { return unary<SqrtOp>(x); }
Tensor rsqrt(Tensor x) { return unary<RsqrtOp>(x); }
Tensor tanh(Tensor x) { return unary<TanhOp>(x); }
Tensor sin(Tensor x) { return unary<SinOp>(x); }
Tensor cos(Tensor x) { return unary<CosOp>(x); }
Tensor sigmoid(Tensor x) { return unary<SigmoidOp>(x); }
Tensor abs(Tensor x) { return unary<AbsOp>(x); }
Tensor relu(Tensor x) { return unary<ReluOp>(x); }
Tensor silu(Tensor x) { return unary<SiluOp>(x); }

Tensor gelu(Tensor x, GeluApprox approximate) {
  Graph &g = x.graph();
  auto kind = approximate == GeluApprox::Tanh ? GeluApproximation::Tanh
                                              : GeluApproximation::None;
  return g.create<GeluOp>(
      x.type(), x.value(),
      {attrs(g).getNamedAttr("approximate",
                             GeluApproximationAttr::get(g.context(), kind))});
}

Tensor leakyRelu(Tensor x, float alpha) {
  Graph &g = x.graph();
  return g.create<LeakyReluOp>(
      x.type(), x.value(),
      {attrs(g).getNamedAttr("alpha", attrs(g).getF32FloatAttr(alpha))});
}

Tensor cast(Tensor x, DType dtype) {
  Graph &g = x.graph();
  return g.create<CastOp>(g.tensorType(x.shape(), dtype), x.value());
}

Tensor dropout(Tensor x, Tensor seed, float rate) {
  Graph &g = graphOf({x, seed});
  return g.infer<DropoutOp>(
      {x.value(), seed.value()},
      {attrs(g).getNamedAttr("rate", attrs(g).getF32FloatAttr(rate))});
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

Tensor matmul(Tensor lhs, Tensor rhs, MatmulOptions options) {
  Graph &g = graphOf({lhs, rhs});
  Builder b = attrs(g);
  SmallVector<NamedAttribute> list;
  if (options.transposeLhs)
    list.push_back(b.getNamedAttr("transpose_lhs", b.getUnitAttr()));
  if (options.transposeRhs)
    list.push_back(b.getNamedAttr("transpose_rhs", b.getUnitAttr()));
  return g.infer<MatmulOp>({lhs.value(), rhs.value()}, list);
}

Tensor linear(Tensor x, Tensor weight, std::optional<Tensor> bias,
              bool transposeWeight) {
  Graph &g = bias ? graphOf({x, weight, *bias}) : graphOf({x, weight});
  Builder b = attrs(g);
  SmallVector<Value> operands = {x.value(), weight.value()};
  if (bias)
    operands.push_back(bias->value());
  SmallVector<NamedAttribute> list;
  if (transposeWeight)
    list.push_back(b.getNamedAttr("transpose_weight", b.getUnitAttr()));
  return g.infer<LinearOp>(operands, list);
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, attention
//===----------------------------------------------------------------------===//

Tensor layerNorm(Tensor x, std::optional<Tensor> weight,
                 std::optional<Tensor> bias, float eps) {
  Graph &g = x.graph();
  Builder b = attrs(g);
  SmallVector<Value> operands = {x.value()};
  for (const std::optional<Tensor> &p : {weight, bias}) {
    if (p) {
      graphOf({x, *p});
      operands.push_back(p->value());
    }
  }
  return g.infer<LayerNormOp>(
      operands,
      {b.getNamedAttr("eps", b.getF32FloatAttr(eps)),
       b.getNamedAttr("operandSegmentSizes",
                      b.getDenseI32ArrayAttr(
                          {1, weight ? 1 : 0, bias ? 1 : 0}))});
}

Tensor rmsNorm(Tensor x, std::optional<Tensor> weight, float eps) {
  Graph &g = weight ? graphOf({x, *weight}) : x.graph();
  Builder b = attrs(g);
  SmallVector<Value> operands = {x.value()};
  if (weight)
    operands.push_back(weight->value());
  return g.infer<RmsNormOp>(operands,
                            {b.getNamedAttr("eps", b.getF32FloatAttr(eps))});
}

Tensor softmax(Tensor x, int64_t dim) {
  Graph &g = x.graph();
  return g.infer<SoftmaxOp>(
      x.value(), {attrs(g).getNamedAttr("dim", attrs(g).getI64IntegerAttr(dim))});
}

Tensor logSoftmax(Tensor x, int64_t dim) {
  Graph &g = x.graph();
  return g.infer<LogSoftmaxOp>(
      x.value(), {attrs(g).getNamedAttr("dim", attrs(g).getI64IntegerAttr(dim))});
}

Tensor attention(Tensor query, Tensor key, Tensor value,
                 const AttentionOptions &options) {
  Graph &g = options.offset ? graphOf({query, key, value, *options.offset})
                            : graphOf({query, key, value});
  Builder b = attrs(g);
  SmallVector<Value> operands = {query.value(), key.value(), value.value()};
  if (options.offset)
    operands.push_back(options.offset->value());
  SmallVector<NamedAttribute> list;
  if (options.causal)
    list.push_back(b.getNamedAttr("causal", b.getUnitAttr()));
  if (options.scale)
    list.push_back(b.getNamedAttr("scale", b.getF32FloatAttr(*options.scale)));
  return g.infer<AttentionOp>(operands, list);
}

Tensor rotary(Tensor x, float theta, std::optional<Tensor> offset,
              std::optional<Tensor> frequencies) {
  Graph &g = x.graph();
  Builder b = attrs(g);
  SmallVector<Value> operands = {x.value()};
  for (const std::optional<Tensor> &p : {offset, frequencies}) {
    if (p) {
      graphOf({x, *p});
      operands.push_back(p->value());
    }
  }
  return g.infer<RotaryOp>(
      operands,
      {b.getNamedAttr("theta", b.getF32FloatAttr(theta)),
       b.getNamedAttr("operandSegmentSizes",
                      b.getDenseI32ArrayAttr({1, offset ? 1 : 0,
                                              frequencies ? 1 : 0}))});
}

Tensor embedding(Tensor table, Tensor ids) {
  return graphOf({table, ids}).infer<EmbeddingOp>({table.value(), ids.value()});
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

Tensor reshape(Tensor x, ArrayRef<int64_t> shape) {
  Graph &g = x.graph();
  return g.create<ReshapeOp>(g.tensorType(shape, x.type().getElementType()),
                             x.value());
}

Tensor transpose(Tensor x, ArrayRef<int64_t> perm) {
  Graph &g = x.graph();
  return g.infer<TransposeOp>(
      x.value(),
      {attrs(g).getNamedAttr("perm", attrs(g).getDenseI64ArrayAttr(perm))});
}

Tensor concat(ArrayRef<Tensor> inputs, int64_t dim) {
  if (inputs.empty())
    throw TraceError("concat needs at least one input");
  Graph &g = inputs[0].graph();
  for (const Tensor &t : inputs)
    graphOf({inputs[0], t});
  return g.infer<ConcatOp>(
      valuesOf(inputs),
      {attrs(g).getNamedAttr("dim", attrs(g).getI64IntegerAttr(dim))});
}

Tensor slice(Tensor x, ArrayRef<int64_t> start, ArrayRef<int64_t> limit,
             ArrayRef<int64_t> stride) {
  Graph &g = x.graph();
  Builder b = attrs(g);
  SmallVector<int64_t> ones(start.size(), 1);
  if (stride.empty())
    stride = ones;
  return g.infer<SliceOp>(
      x.value(), {b.getNamedAttr("start", b.getDenseI64ArrayAttr(start)),
                  b.getNamedAttr("limit", b.getDenseI64ArrayAttr(limit)),
                  b.getNamedAttr("stride", b.getDenseI64ArrayAttr(stride))});
}

Tensor dynamicSlice(Tensor x, Tensor start, int64_t dim, int64_t length) {
  Graph &g = graphOf({x, start});
  auto d = normalizeDim(dim, x.rank());
  if (!d)
    throw TraceError("dynamic_slice: dim " + std::to_string(dim) +
                     " is out of range for " + formatShape(x.shape()));
  Shape shape(x.shape());
  shape[*d] = length;
  return g.create<DynamicSliceOp>(
      g.tensorType(shape, x.type().getElementType()),
      {x.value(), start.value()},
      {attrs(g).getNamedAttr("dim", attrs(g).getI64IntegerAttr(dim))});
}

Tensor broadcastTo(Tensor x, ArrayRef<int64_t> shape) {
  Graph &g = x.graph();
  return g.create<BroadcastToOp>(
      g.tensorType(shape, x.type().getElementType()), x.value());
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

Tensor reduceSum(Tensor x, ArrayRef<int64_t> dims, bool keepdim) {
  return reduce<ReduceSumOp>(x, dims, keepdim);
}
Tensor reduceMean(Tensor x, ArrayRef<int64_t> dims, bool keepdim) {
  return reduce<ReduceMeanOp>(x, dims, keepdim);
}
Tensor reduceMax(Tensor x, ArrayRef<int64_t> dims, bool keepdim) {
  return reduce<ReduceMaxOp>(x, dims, keepdim);
}

Tensor argmax(Tensor x, int64_t dim) {
  Graph &g = x.graph();
  return g.infer<ArgmaxOp>(
      x.value(), {attrs(g).getNamedAttr("dim", attrs(g).getI64IntegerAttr(dim))});
}

//===----------------------------------------------------------------------===//
// Losses, sampling, caches
//===----------------------------------------------------------------------===//

Tensor crossEntropy(Tensor logits, Tensor targets, int64_t ignoreIndex) {
  Graph &g = graphOf({logits, targets});
  return g.infer<CrossEntropyOp>(
      {logits.value(), targets.value()},
      {attrs(g).getNamedAttr("ignore_index",
                             attrs(g).getI64IntegerAttr(ignoreIndex))});
}

Tensor sample(Tensor logits, Tensor temperature, Tensor topK, Tensor topP,
              Tensor seed) {
  Graph &g = graphOf({logits, temperature, topK, topP, seed});
  return g.infer<SampleOp>({logits.value(), temperature.value(), topK.value(),
                            topP.value(), seed.value()});
}

Tensor kvCacheUpdate(Tensor cache, Tensor update, Tensor position,
                     int64_t dim) {
  Graph &g = graphOf({cache, update, position});
  return g.infer<KvCacheUpdateOp>(
      {cache.value(), update.value(), position.value()},
      {attrs(g).getNamedAttr("dim", attrs(g).getI64IntegerAttr(dim))});
}

Tensor pagedKvWrite(Tensor pool, Tensor update, Tensor blocks,
                    Tensor positions) {
  Graph &g = graphOf({pool, update, blocks, positions});
  return g.infer<KvCacheUpdateOp>(
      {pool.value(), update.value(), positions.value(), blocks.value()},
      {attrs(g).getNamedAttr("dim", attrs(g).getI64IntegerAttr(2))});
}

Tensor pagedAttention(Tensor query, Tensor keyPool, Tensor valuePool,
                      Tensor blocks, Tensor positions) {
  Graph &g = graphOf({query, keyPool, valuePool, blocks, positions});
  return g.infer<PagedAttentionOp>({query.value(), keyPool.value(),
                                    valuePool.value(), blocks.value(),
                                    positions.value()});
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

Tensor moeRoute(Tensor logits, int64_t topK) {
  Graph &g = logits.graph();
  return g.infer<MoeRouteOp>(
      logits.value(),
      {attrs(g).getNamedAttr("top_k", attrs(g).getI64IntegerAttr(topK))});
}

Tensor moeFfn(Tensor x, Tensor ids, Tensor weights, ArrayRef<Tensor> experts) {
  Graph &g = graphOf({x, ids, weights});
  SmallVector<Value> operands = {x.value(), ids.value(), weights.value()};
  for (const Tensor &e : experts) {
    graphOf({x, e});
    operands.push_back(e.value());
  }
  return g.infer<MoeFfnOp>(operands);
}

} // namespace tfc::frontend
