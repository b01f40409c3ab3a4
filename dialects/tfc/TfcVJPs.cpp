//===- TfcVJPs.cpp - vector-Jacobian products of tfc ops ------------------===//
//
// Each differentiable op's VJP, in the order of TfcOps.td. A VJP receives the
// gradient of the loss with respect to the op's results and builds ordinary
// tfc IR for the gradients of its operands; later passes optimize that IR
// like any other. Forward values a VJP needs are the op's own operands and
// results (the autodiff pass and rematerialization decide what to keep).
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/TfcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

using namespace mlir;
using namespace tfc;

namespace {

/// Small builders over tfc ops, so that each VJP reads like its formula.
struct G {
  OpBuilder &b;
  Location loc;

  RankedTensorType type(Value v) const {
    return llvm::cast<RankedTensorType>(v.getType());
  }
  /// A 0-d constant with `like`'s element type; broadcasts against anything.
  Value c(Value like, double v) {
    auto t = RankedTensorType::get({}, type(like).getElementType());
    return b.create<ConstantOp>(
        loc, DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), v)));
  }
  Value zeros(RankedTensorType t) {
    return b.create<ConstantOp>(
        loc, DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0)));
  }
  Value add(Value x, Value y) { return b.create<AddOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<SubOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<MulOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<DivOp>(loc, x, y); }
  Value neg(Value x) { return b.create<NegOp>(loc, x); }
  Value step(Value x) { return b.create<StepOp>(loc, x); }
  Value exp(Value x) { return b.create<ExpOp>(loc, x); }
  Value reshape(Value x, RankedTensorType t) {
    return x.getType() == t ? x : b.create<ReshapeOp>(loc, t, x).getResult();
  }
  /// Sums over `dims`, keeping them as size 1.
  Value sumKeep(Value x, ArrayRef<int64_t> dims) {
    return b.create<ReduceSumOp>(loc, x, dims, /*keepdim=*/true);
  }
  Value meanKeep(Value x, ArrayRef<int64_t> dims) {
    return b.create<ReduceMeanOp>(loc, x, dims, /*keepdim=*/true);
  }

  /// Sums a gradient of a broadcast result down to an operand of type `t`:
  /// over leading dimensions the operand lacks and over its size-1
  /// dimensions that were broadcast.
  Value sumTo(Value grad, RankedTensorType t) {
    if (grad.getType() == t)
      return grad;
    auto g = type(grad);
    int64_t lead = g.getRank() - t.getRank();
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < g.getRank(); ++d)
      if (d < lead || (t.getDimSize(d - lead) == 1 && g.getDimSize(d) != 1))
        dims.push_back(d);
    Value summed = dims.empty() ? grad : sumKeep(grad, dims);
    return reshape(summed, t);
  }
};

bool isFloat(Value v) {
  return llvm::isa<FloatType>(
      llvm::cast<RankedTensorType>(v.getType()).getElementType());
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// The VJPs of the broadcasting binary ops: `local` gives the gradient of
/// each operand at the broadcast shape; it is summed back to the operand.
template <typename Op, typename Fn>
static LogicalResult binaryVJP(Op op, OpBuilder &b, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out, Fn local) {
  out.assign(2, Value());
  if (!isFloat(op.getLhs()))
    return success(); // Integer arithmetic carries no gradient.
  G g{b, op.getLoc()};
  auto [dl, dr] = local(g, grads[0]);
  if (dl)
    out[0] = g.sumTo(dl, g.type(op.getLhs()));
  if (dr)
    out[1] = g.sumTo(dr, g.type(op.getRhs()));
  return success();
}

LogicalResult AddOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  return binaryVJP(*this, b, grads, out, [](G &, Value g) {
    return std::pair{g, g};
  });
}

LogicalResult SubOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  return binaryVJP(*this, b, grads, out, [](G &e, Value g) {
    return std::pair{g, e.neg(g)};
  });
}

LogicalResult MulOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  return binaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    return std::pair{e.mul(g, getRhs()), e.mul(g, getLhs())};
  });
}

LogicalResult DivOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  // d(a/b) = da / b - db * (a/b) / b
  return binaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    Value da = e.div(g, getRhs());
    return std::pair{da, e.neg(e.mul(da, getResult()))};
  });
}

LogicalResult MaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  // Ties go to lhs.
  return binaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    Value rhsWins = e.step(e.sub(getRhs(), getLhs()));
    Value lhsWins = e.sub(e.c(g, 1.0), rhsWins);
    return std::pair{e.mul(g, lhsWins), e.mul(g, rhsWins)};
  });
}

LogicalResult MinOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  // Ties go to lhs.
  return binaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    Value rhsWins = e.step(e.sub(getLhs(), getRhs()));
    Value lhsWins = e.sub(e.c(g, 1.0), rhsWins);
    return std::pair{e.mul(g, lhsWins), e.mul(g, rhsWins)};
  });
}

LogicalResult PowOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  // d(a^p) = p a^(p-1) da + a^p log(a) dp
  return binaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    Value a = getLhs(), p = getRhs();
    Value pm1 = e.sub(p, e.c(p, 1.0));
    Value da = e.mul(g, e.mul(p, e.b.create<PowOp>(e.loc, a, pm1)));
    Value dp = e.mul(g, e.mul(getResult(), e.b.create<LogOp>(e.loc, a)));
    return std::pair{da, dp};
  });
}

/// The VJPs of unary ops: out = local(g) (the operand's gradient).
template <typename Op, typename Fn>
static LogicalResult unaryVJP(Op op, OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out, Fn local) {
  out.assign(1, Value());
  if (!isFloat(op.getX()))
    return success();
  G g{b, op.getLoc()};
  out[0] = local(g, grads[0]);
  return success();
}

LogicalResult ExpOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, grads, out,
                  [this](G &e, Value g) { return e.mul(g, getResult()); });
}

LogicalResult LogOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, grads, out,
                  [this](G &e, Value g) { return e.div(g, getX()); });
}

LogicalResult SqrtOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out) {
  // d sqrt(x) = dx / (2 sqrt(x))
  return unaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    return e.div(e.mul(g, e.c(g, 0.5)), getResult());
  });
}

LogicalResult RsqrtOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                SmallVectorImpl<Value> &out) {
  // d x^(-1/2) = -1/2 x^(-3/2) dx = -1/2 y^3 dx
  return unaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    Value y = getResult();
    return e.mul(e.mul(g, e.c(g, -0.5)), e.mul(y, e.mul(y, y)));
  });
}

LogicalResult TanhOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    Value y = getResult();
    return e.mul(g, e.sub(e.c(g, 1.0), e.mul(y, y)));
  });
}

LogicalResult SinOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    return e.mul(g, e.b.create<CosOp>(e.loc, getX()));
  });
}

LogicalResult CosOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    return e.neg(e.mul(g, e.b.create<SinOp>(e.loc, getX())));
  });
}

LogicalResult SigmoidOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    Value y = getResult();
    return e.mul(g, e.mul(y, e.sub(e.c(g, 1.0), y)));
  });
}

LogicalResult NegOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, grads, out,
                  [](G &e, Value g) { return e.neg(g); });
}

LogicalResult AbsOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  // sign(x) = step(x) - step(-x); 0 at 0 as in PyTorch.
  return unaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    Value sign = e.sub(e.step(getX()), e.step(e.neg(getX())));
    return e.mul(g, sign);
  });
}

LogicalResult ReluOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    return e.mul(g, e.step(getX()));
  });
}

LogicalResult SiluOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out) {
  // d(x s(x)) = s (1 + x (1 - s))
  return unaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    Value x = getX();
    Value s = e.b.create<SigmoidOp>(e.loc, x);
    Value one = e.c(g, 1.0);
    return e.mul(g, e.mul(s, e.add(one, e.mul(x, e.sub(one, s)))));
  });
}

LogicalResult GeluOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out) {
  if (getApproximate() != GeluApproximation::Tanh)
    return emitOpError("the VJP of exact gelu (erf) is not implemented; use "
                       "approximate = tanh");
  // y = x/2 (1 + t), t = tanh(u), u = k (x + a x^3):
  // dy/dx = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3 a x^2)
  return unaryVJP(*this, b, grads, out, [this](G &e, Value g) {
    const double k = std::sqrt(2.0 / M_PI), a = 0.044715;
    Value x = getX();
    Value x2 = e.mul(x, x);
    Value u = e.mul(e.c(x, k), e.add(x, e.mul(e.c(x, a), e.mul(x2, x))));
    Value t = e.b.create<TanhOp>(e.loc, u);
    Value one = e.c(x, 1.0), half = e.c(x, 0.5);
    Value left = e.mul(half, e.add(one, t));
    Value du = e.mul(e.c(x, k), e.add(one, e.mul(e.c(x, 3 * a), x2)));
    Value right = e.mul(e.mul(half, x), e.mul(e.sub(one, e.mul(t, t)), du));
    return e.mul(g, e.add(left, right));
  });
}

LogicalResult LeakyReluOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  double alpha = getAlpha().convertToDouble();
  // With 0 < alpha < inf, y = leaky_relu(x) has x's sign and y > 0 iff x > 0
  // (x * alpha may underflow to -0, never above 0; NaN stays NaN): step(y) ==
  // step(x). Reading y leaves x no use past the op, so a linear producing x
  // can absorb the activation into its epilogue in training too.
  Value sign = alpha > 0 && std::isfinite(alpha) ? getResult() : getX();
  return unaryVJP(*this, b, grads, out, [alpha, sign](G &e, Value g) {
    Value slope =
        e.add(e.c(g, alpha), e.mul(e.c(g, 1.0 - alpha), e.step(sign)));
    return e.mul(g, slope);
  });
}

LogicalResult CastOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (!isFloat(getX()) || !isFloat(getResult()))
    return success();
  out[0] = b.create<CastOp>(getLoc(), getX().getType(), grads[0]);
  return success();
}

LogicalResult DropoutOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  // The mask is a function of (seed, element index): the same seed drops
  // the same elements of the gradient and scales the rest alike.
  out.assign(2, Value());
  out[0] = b.create<DropoutOp>(getLoc(), grads[0], getSeed(), getRateAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  out.assign(2, Value());
  if (!isFloat(getLhs()))
    return success();
  G e{b, getLoc()};
  Value g = grads[0], lhs = getLhs(), rhs = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  auto mm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return b.create<MatmulOp>(getLoc(), x, y, tx, ty);
  };
  // C = op(A) op(B); dop(A) = G op(B)^T, dop(B) = op(A)^T G. A stored
  // transposed gets the transpose of its gradient, computed directly.
  Value da = ta ? mm(rhs, g, tb, true) : mm(g, rhs, false, !tb);
  Value db = tb ? mm(g, lhs, true, ta) : mm(lhs, g, !ta, false);
  out[0] = e.sumTo(da, e.type(lhs));
  out[1] = e.sumTo(db, e.type(rhs));
  return success();
}

LogicalResult LinearOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  out.assign(getNumOperands(), Value());
  G e{b, getLoc()};
  Value g = grads[0], x = getX(), w = getWeight();
  bool tw = getTransposeWeight();
  // dx = G op(W)^T: a linear layer with the weight read the other way.
  out[0] = b.create<LinearOp>(getLoc(), g, w, Value(), !tw);
  // dW over all leading dimensions flattened to rows.
  auto xt = e.type(x), gt = e.type(g);
  int64_t rows = numElements(xt.getShape().drop_back());
  Value x2 = e.reshape(x, RankedTensorType::get({rows, xt.getShape().back()},
                                                xt.getElementType()));
  Value g2 = e.reshape(g, RankedTensorType::get({rows, gt.getShape().back()},
                                                gt.getElementType()));
  out[1] = tw ? b.create<MatmulOp>(getLoc(), g2, x2, true, false).getResult()
              : b.create<MatmulOp>(getLoc(), x2, g2, true, false).getResult();
  if (getBias())
    out[2] = e.sumTo(g, e.type(getBias()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, attention
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  out.assign(getNumOperands(), Value());
  G e{b, getLoc()};
  Value x = getX(), g = grads[0];
  int64_t last = e.type(x).getRank() - 1;
  // Recompute the statistics: xhat = (x - mean) * rstd.
  Value xc = e.sub(x, e.meanKeep(x, {last}));
  Value var = e.meanKeep(e.mul(xc, xc), {last});
  Value rstd = b.create<RsqrtOp>(
      getLoc(), e.add(var, e.c(x, getEps().convertToDouble())));
  Value xhat = e.mul(xc, rstd);
  // dx = rstd (gw - mean(gw) - xhat mean(gw xhat)), gw = g * weight.
  Value gw = getWeight() ? e.mul(g, getWeight()) : g;
  Value dx = e.mul(rstd, e.sub(e.sub(gw, e.meanKeep(gw, {last})),
                               e.mul(xhat, e.meanKeep(e.mul(gw, xhat), {last}))));
  out[0] = dx;
  unsigned next = 1;
  if (getWeight())
    out[next++] = e.sumTo(e.mul(g, xhat), e.type(getWeight()));
  if (getBias())
    out[next++] = e.sumTo(g, e.type(getBias()));
  return success();
}

LogicalResult RmsNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  out.assign(getNumOperands(), Value());
  G e{b, getLoc()};
  Value x = getX(), g = grads[0];
  int64_t last = e.type(x).getRank() - 1;
  Value rstd = b.create<RsqrtOp>(
      getLoc(),
      e.add(e.meanKeep(e.mul(x, x), {last}), e.c(x, getEps().convertToDouble())));
  Value xhat = e.mul(x, rstd);
  // dx = rstd (gw - xhat mean(gw xhat)), gw = g * weight.
  Value gw = getWeight() ? e.mul(g, getWeight()) : g;
  out[0] = e.mul(rstd, e.sub(gw, e.mul(xhat, e.meanKeep(e.mul(gw, xhat), {last}))));
  if (getWeight())
    out[1] = e.sumTo(e.mul(g, xhat), e.type(getWeight()));
  return success();
}

LogicalResult SoftmaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  // dx = y (g - sum(g y))
  G e{b, getLoc()};
  Value y = getResult(), g = grads[0];
  int64_t dim = *normalizeDim((int64_t)getDim(), e.type(y).getRank());
  out.assign(1, e.mul(y, e.sub(g, e.sumKeep(e.mul(g, y), {dim}))));
  return success();
}

LogicalResult LogSoftmaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  // dx = g - exp(y) sum(g)
  G e{b, getLoc()};
  Value y = getResult(), g = grads[0];
  int64_t dim = *normalizeDim((int64_t)getDim(), e.type(y).getRank());
  out.assign(1, e.sub(g, e.mul(e.exp(y), e.sumKeep(g, {dim}))));
  return success();
}

LogicalResult AttentionOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  out.assign(getNumOperands(), Value());
  auto grad = b.create<AttentionGradOp>(
      getLoc(), getQuery(), getKey(), getValue(), getResult(), grads[0],
      getOffset(), getCausalAttr(), getScaleAttr());
  out[0] = grad.getGradQuery();
  out[1] = grad.getGradKey();
  out[2] = grad.getGradValue();
  return success();
}

LogicalResult MoeFfnOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  // Operands (x, ids, weights, experts...) -> results (dx, dweights,
  // dexperts...): ids get none.
  SmallVector<Type> types = {getX().getType(), getWeights().getType()};
  for (Value e : getExperts())
    types.push_back(e.getType());
  auto grad = b.create<MoeFfnGradOp>(getLoc(), types, getX(), getIds(),
                                     getWeights(), grads[0], getExperts(),
                                     getFirstExpertAttr());
  out.assign(getNumOperands(), Value());
  out[0] = grad.getResult(0);
  out[2] = grad.getResult(1);
  for (size_t i = 0; i < getExperts().size(); ++i)
    out[3 + i] = grad.getResult(2 + i);
  return success();
}

LogicalResult RotaryOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  // A rotation's transpose is the rotation by the opposite angle.
  out.assign(getNumOperands(), Value());
  out[0] = b.create<RotaryOp>(getLoc(), grads[0], getOffset(),
                              getFrequencies(), getThetaAttr(),
                              getInverse() ? UnitAttr() : b.getUnitAttr());
  return success();
}

LogicalResult EmbeddingOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  out.assign(2, Value());
  out[0] = b.create<EmbeddingGradOp>(getLoc(), getTable().getType(), grads[0],
                                     getIds(), /*init=*/Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (isFloat(getX()))
    out[0] = b.create<ReshapeOp>(getLoc(), getX().getType(), grads[0]);
  return success();
}

LogicalResult TransposeOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (!isFloat(getX()))
    return success();
  SmallVector<int64_t> inverse(getPerm().size());
  for (auto [i, p] : llvm::enumerate(getPerm()))
    inverse[p] = i;
  out[0] = b.create<TransposeOp>(getLoc(), grads[0], inverse);
  return success();
}

LogicalResult ConcatOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  out.assign(getNumOperands(), Value());
  auto resultType = getType();
  int64_t dim = *normalizeDim((int64_t)getDim(), resultType.getRank());
  int64_t offset = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    auto t = llvm::cast<RankedTensorType>(input.getType());
    SmallVector<int64_t> start(t.getRank(), 0), limit(resultType.getShape()),
        stride(t.getRank(), 1);
    start[dim] = offset;
    limit[dim] = offset + t.getDimSize(dim);
    offset = limit[dim];
    if (isFloat(input))
      out[i] = b.create<SliceOp>(getLoc(), grads[0], start, limit, stride);
  }
  return success();
}

LogicalResult SliceOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (!isFloat(getX()))
    return success();
  if (llvm::any_of(getStride(), [](int64_t s) { return s != 1; }))
    return emitOpError("the VJP of a strided slice is not implemented");
  // Pad the gradient back with zeros, one dimension at a time.
  G e{b, getLoc()};
  Value g = grads[0];
  auto full = getX().getType();
  for (int64_t d = 0; d < full.getRank(); ++d) {
    auto gt = e.type(g);
    SmallVector<Value> pieces;
    auto zerosOf = [&](int64_t n) {
      SmallVector<int64_t> shape(gt.getShape());
      shape[d] = n;
      return e.zeros(RankedTensorType::get(shape, gt.getElementType()));
    };
    int64_t before = getStart()[d], after = full.getDimSize(d) - getLimit()[d];
    if (before > 0)
      pieces.push_back(zerosOf(before));
    pieces.push_back(g);
    if (after > 0)
      pieces.push_back(zerosOf(after));
    if (pieces.size() > 1)
      g = b.create<ConcatOp>(getLoc(), pieces, d);
  }
  out[0] = g;
  return success();
}

LogicalResult BroadcastToOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                      SmallVectorImpl<Value> &out) {
  out.assign(1, Value());
  if (isFloat(getX()))
    out[0] = G{b, getLoc()}.sumTo(grads[0], getX().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Spreads the gradient of a reduction back over the reduced dimensions,
/// times `scale`.
template <typename Op>
static LogicalResult reduceVJP(Op op, OpBuilder &b, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out, bool mean) {
  out.assign(1, Value());
  if (!isFloat(op.getX()))
    return success();
  G e{b, op.getLoc()};
  auto xt = op.getX().getType();
  SmallVector<int64_t> keptShape(xt.getShape());
  int64_t count = 1;
  for (int64_t d : op.getDims()) {
    int64_t n = *normalizeDim(d, xt.getRank());
    count *= xt.getDimSize(n);
    keptShape[n] = 1;
  }
  Value g = e.reshape(grads[0], RankedTensorType::get(keptShape,
                                                      xt.getElementType()));
  if (mean)
    g = e.mul(g, e.c(g, 1.0 / count));
  out[0] = b.create<BroadcastToOp>(op.getLoc(), xt, g);
  return success();
}

LogicalResult ReduceSumOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  return reduceVJP(*this, b, grads, out, /*mean=*/false);
}

LogicalResult ReduceMeanOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  return reduceVJP(*this, b, grads, out, /*mean=*/true);
}

LogicalResult ReduceMaxOp::buildVJP(OpBuilder &, ArrayRef<Value>,
                                    SmallVectorImpl<Value> &) {
  return emitOpError("the VJP of reduce_max is not implemented");
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &out) {
  out.assign(2, Value());
  out[0] = b.create<CrossEntropyGradOp>(getLoc(), getLogits(), getTargets(),
                                        grads[0], getIgnoreIndexAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  // Megatron's g: y = reduce over ranks of x is replicated, so dL/dy is the
  // same on every rank and dL/dx = dL/dy (sum) or dL/dy / n (mean); no
  // communication in the backward.
  G e{b, getLoc()};
  out.assign(1, grads[0]);
  if (getReduce() == "mean")
    out[0] = e.mul(grads[0], e.c(grads[0], 1.0 / double(getSize())));
  return success();
}

LogicalResult ReduceScatterOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                        SmallVectorImpl<Value> &out) {
  // Block r of every rank's x reaches rank r's result: dL/dx on each rank is
  // the concatenation of every rank's dL/dresult (sum), over n (mean).
  G e{b, getLoc()};
  out.assign(1, b.create<AllGatherOp>(getLoc(), grads[0], getGroupAttr(),
                                      getSizeAttr()));
  if (getReduce() == "mean")
    out[0] = e.mul(out[0], e.c(out[0], 1.0 / double(getSize())));
  return success();
}

LogicalResult AllGatherOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  // The result is replicated, so dL/dresult is the same on every rank and
  // rank r's dL/dx is its block r; the mean over ranks of equal blocks is
  // that block (a reduce-scatter keeps the op's own VJP an all-gather).
  out.assign(1,
             b.create<ReduceScatterOp>(getLoc(), grads[0], getGroupAttr(),
                                       b.getStringAttr("mean"), getSizeAttr()));
  return success();
}

LogicalResult AllToAllOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                   SmallVectorImpl<Value> &out) {
  // y_r[s] = x_s[r] over ranks r, s and blocks [.]: dL/dx_s[r] = dL/dy_r[s],
  // which is the all-to-all of the cotangents.
  out.assign(1, b.create<AllToAllOp>(getLoc(), grads[0], getGroupAttr(),
                                     getSizeAttr()));
  return success();
}

LogicalResult CopyToGroupOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                      SmallVectorImpl<Value> &out) {
  // Megatron's f: each rank's cotangent is its part of dL/dx (the rank's
  // columns of a column-parallel linear); the whole is their sum.
  out.assign(1, b.create<AllReduceOp>(getLoc(), grads[0], getGroupAttr(),
                                      b.getStringAttr("sum"), getSizeAttr()));
  return success();
}
