//===- TfcOps.cpp - tfc op verifiers, type inference, folds ----------------===//
//
// Shape rules live in one place per op: `inferReturnTypes` for ops whose result
// follows from the operands (MLIR calls it from the verifier and compares with
// the written result type), `verify` for the few whose result is given.
// Messages name the operand and show expected vs. found.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/TfcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace tfc;

namespace {

/// Emits "'tfc.<op>' op <message>" at the op's location when there is one.
/// Inference also runs from builders, where no location may be given.
struct OpDiag {
  std::optional<Location> loc;
  StringRef opName;
  template <typename... Args>
  LogicalResult operator()(Args &&...args) const {
    return emitOptionalError(loc, "'tfc.", opName, "' op ",
                             std::forward<Args>(args)...);
  }
};

RankedTensorType tensorOf(Value v) {
  return v ? llvm::dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

std::string shapeOf(RankedTensorType t) { return formatShape(t.getShape()); }

/// Both operands must have been checked by ODS constraints in the verifier,
/// but builders call inference directly: refuse anything that is not a tensor.
LogicalResult requireTensors(const OpDiag &diag,
                             ArrayRef<std::pair<StringRef, Value>> operands) {
  for (auto [name, value] : operands)
    if (value && !tensorOf(value))
      return diag("operand '", name, "' must be a ranked tensor");
  return success();
}

LogicalResult sameElementType(const OpDiag &diag, StringRef aName,
                              RankedTensorType a, StringRef bName,
                              RankedTensorType b) {
  if (a.getElementType() != b.getElementType())
    return diag("operand '", bName, "' has element type ", b.getElementType(),
                " but operand '", aName, "' has ", a.getElementType(),
                "; they must match");
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Initializer specs for tfc.param and tfc.state
//===----------------------------------------------------------------------===//

/// Checks an initializer spec: `zeros`, `ones`, `constant(v)`, `normal(m, s)`,
/// `uniform(lo, hi)`, `orthogonal(gain)`. The runtime parses the same grammar.
static LogicalResult verifyInitSpec(Operation *op, StringRef spec,
                                    RankedTensorType type) {
  StringRef s = spec.trim();
  if (s == "zeros" || s == "ones")
    return success();
  size_t open = s.find('(');
  if (open == StringRef::npos || !s.ends_with(")"))
    return op->emitOpError("initializer '")
           << spec
           << "' is not one of zeros, ones, constant(v), normal(mean, std), "
              "uniform(lo, hi), orthogonal(gain)";
  StringRef kind = s.take_front(open).trim();
  SmallVector<StringRef> args;
  s.slice(open + 1, s.size() - 1).split(args, ',');
  SmallVector<double> values;
  for (StringRef a : args) {
    double v;
    if (a.trim().getAsDouble(v))
      return op->emitOpError("initializer '")
             << spec << "': argument '" << a.trim() << "' is not a number";
    if (!std::isfinite(v))
      return op->emitOpError("initializer '")
             << spec << "': argument '" << a.trim() << "' is not finite";
    values.push_back(v);
  }
  size_t expected = llvm::StringSwitch<size_t>(kind)
                        .Case("constant", 1)
                        .Case("normal", 2)
                        .Case("uniform", 2)
                        .Case("orthogonal", 1)
                        .Default(0);
  if (expected == 0)
    return op->emitOpError("unknown initializer '") << kind << "' in '" << spec
                                                    << "'";
  if (values.size() != expected)
    return op->emitOpError("initializer '")
           << kind << "' takes " << expected << " argument(s), got "
           << values.size();
  if (kind == "normal" && values[1] < 0)
    return op->emitOpError("normal initializer needs std >= 0, got ")
           << values[1];
  if (kind == "uniform" && values[0] > values[1])
    return op->emitOpError("uniform initializer needs lo <= hi, got (")
           << values[0] << ", " << values[1] << ")";
  if (kind == "orthogonal" && type.getRank() < 2)
    return op->emitOpError("orthogonal initializer needs a tensor of rank >= 2, "
                           "got rank ")
           << type.getRank();
  if (kind != "zeros" && kind != "ones" && kind != "constant" &&
      !llvm::isa<FloatType>(type.getElementType()))
    return op->emitOpError("random initializer '")
           << kind << "' needs a float tensor, got " << type.getElementType();
  return success();
}

LogicalResult ParamOp::verify() {
  return verifyInitSpec(*this, getInit(), getTensorType());
}

LogicalResult StateOp::verify() {
  return verifyInitSpec(*this, getInit(), getTensorType());
}

/// Finds the tfc.param or tfc.state `name` refers to and checks the type.
static LogicalResult verifyStorageUse(Operation *op, FlatSymbolRefAttr name,
                                      Type type, SymbolTableCollection &table,
                                      bool isWrite) {
  Operation *target = table.lookupNearestSymbolFrom(op, name.getAttr());
  if (!target)
    return op->emitOpError("refers to ")
           << name << ", which is not declared by a tfc.param or tfc.state";
  Type declared;
  if (auto param = llvm::dyn_cast<ParamOp>(target)) {
    declared = param.getType();
    if (isWrite && param.getFrozen())
      return op->emitOpError("writes frozen parameter ") << name;
  } else if (auto state = llvm::dyn_cast<StateOp>(target)) {
    declared = state.getType();
  } else {
    return op->emitOpError("refers to ")
           << name << ", which is a '" << target->getName()
           << "', not a tfc.param or tfc.state";
  }
  if (declared != type)
    return op->emitOpError("type ")
           << type << " does not match " << name << " declared as "
           << declared;
  return success();
}

LogicalResult LoadOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyStorageUse(*this, getNameAttr(), getType(), table, false);
}

LogicalResult StoreOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyStorageUse(*this, getNameAttr(), getValue().getType(), table,
                          true);
}

//===----------------------------------------------------------------------===//
// Constants and iota
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto value = llvm::dyn_cast_or_null<ElementsAttr>(adaptor.getValueAttr());
  if (!value)
    return failure();
  inferred.push_back(value.getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

LogicalResult IotaOp::verify() {
  auto type = getType();
  if (!normalizeDim(getDim(), type.getRank()) || (int64_t)getDim() < 0)
    return emitOpError("dim ") << (int64_t)getDim()
                               << " is out of range for result of rank "
                               << type.getRank();
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult inferBroadcast(std::optional<Location> loc, StringRef name,
                                    Value lhsValue, Value rhsValue,
                                    SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, name};
  if (failed(requireTensors(diag, {{"lhs", lhsValue}, {"rhs", rhsValue}})))
    return failure();
  auto lhs = tensorOf(lhsValue), rhs = tensorOf(rhsValue);
  if (failed(sameElementType(diag, "lhs", lhs, "rhs", rhs)))
    return failure();
  auto shape = broadcastShapes(lhs.getShape(), rhs.getShape());
  if (!shape)
    return diag("operands do not broadcast: lhs ", shapeOf(lhs), " vs rhs ",
                shapeOf(rhs));
  inferred.push_back(RankedTensorType::get(*shape, lhs.getElementType()));
  return success();
}

#define TFC_BINARY_INFER(OP, NAME)                                             \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferBroadcast(loc, NAME, adaptor.getLhs(), adaptor.getRhs(),       \
                          inferred);                                           \
  }
TFC_BINARY_INFER(AddOp, "add")
TFC_BINARY_INFER(SubOp, "sub")
TFC_BINARY_INFER(MulOp, "mul")
TFC_BINARY_INFER(DivOp, "div")
TFC_BINARY_INFER(MaxOp, "max")
TFC_BINARY_INFER(MinOp, "min")
#undef TFC_BINARY_INFER

LogicalResult PowOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  if (failed(inferBroadcast(loc, "pow", adaptor.getLhs(), adaptor.getRhs(),
                            inferred)))
    return failure();
  if (!llvm::isa<FloatType>(tensorOf(adaptor.getLhs()).getElementType()))
    return OpDiag{loc, "pow"}("operands 'lhs' and 'rhs' must be float "
                              "tensors, got element type ",
                              tensorOf(adaptor.getLhs()).getElementType());
  return success();
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  // -(-x) == x exactly, for floats and two's-complement integers alike.
  if (auto inner = getX().getDefiningOp<NegOp>())
    return inner.getX();
  return {};
}

LogicalResult CastOp::verify() {
  if (getX().getType().getShape() != getType().getShape())
    return emitOpError("result shape ")
           << shapeOf(getType()) << " differs from operand shape "
           << shapeOf(getX().getType()) << "; cast only changes the element type";
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  return {};
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  float rate = adaptor.getRate().convertToFloat();
  if (!(rate >= 0.0f && rate < 1.0f))
    return OpDiag{loc, "dropout"}("rate must be in [0, 1), got ", rate);
  inferred.push_back(adaptor.getX().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "matmul"};
  if (failed(requireTensors(diag, {{"lhs", adaptor.getLhs()},
                                   {"rhs", adaptor.getRhs()}})))
    return failure();
  auto lhs = tensorOf(adaptor.getLhs()), rhs = tensorOf(adaptor.getRhs());
  if (failed(sameElementType(diag, "lhs", lhs, "rhs", rhs)))
    return failure();
  if (lhs.getRank() < 2)
    return diag("operand 'lhs' must have rank >= 2, got ", shapeOf(lhs));
  if (rhs.getRank() < 2)
    return diag("operand 'rhs' must have rank >= 2, got ", shapeOf(rhs));
  auto ls = lhs.getShape(), rs = rhs.getShape();
  int64_t m = ls[ls.size() - 2], kl = ls.back();
  if (adaptor.getTransposeLhs())
    std::swap(m, kl);
  int64_t kr = rs[rs.size() - 2], n = rs.back();
  if (adaptor.getTransposeRhs())
    std::swap(kr, n);
  if (kl != kr)
    return diag("contracting dimensions differ: lhs ", shapeOf(lhs),
                adaptor.getTransposeLhs() ? " (transposed)" : "", " has K = ",
                kl, " but rhs ", shapeOf(rhs),
                adaptor.getTransposeRhs() ? " (transposed)" : "", " has K = ",
                kr);
  auto batch = broadcastShapes(ls.drop_back(2), rs.drop_back(2));
  if (!batch)
    return diag("batch dimensions do not broadcast: lhs ",
                formatShape(ls.drop_back(2)), " vs rhs ",
                formatShape(rs.drop_back(2)));
  SmallVector<int64_t> shape(*batch);
  shape.push_back(m);
  shape.push_back(n);
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "linear"};
  if (failed(requireTensors(diag, {{"x", adaptor.getX()},
                                   {"weight", adaptor.getWeight()},
                                   {"bias", adaptor.getBias()}})))
    return failure();
  auto x = tensorOf(adaptor.getX()), w = tensorOf(adaptor.getWeight());
  if (failed(sameElementType(diag, "x", x, "weight", w)))
    return failure();
  if (x.getRank() < 1)
    return diag("operand 'x' must have rank >= 1, got ", shapeOf(x));
  if (w.getRank() != 2)
    return diag("operand 'weight' must be a matrix, got ", shapeOf(w));
  int64_t k = w.getDimSize(0), n = w.getDimSize(1);
  if (adaptor.getTransposeWeight())
    std::swap(k, n);
  if (x.getShape().back() != k)
    return diag("operand 'x' ", shapeOf(x), " has last dimension ",
                x.getShape().back(), " but 'weight' ", shapeOf(w),
                adaptor.getTransposeWeight() ? " ([N, K], transpose_weight)"
                                             : " ([K, N])",
                " expects K = ", k);
  if (auto b = tensorOf(adaptor.getBias())) {
    if (failed(sameElementType(diag, "x", x, "bias", b)))
      return failure();
    if (b.getRank() != 1 || b.getDimSize(0) != n)
      return diag("operand 'bias' has shape ", shapeOf(b), ", expected [", n,
                  "]");
  }
  SmallVector<int64_t> shape(x.getShape());
  shape.back() = n;
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, attention, rotary, embedding
//===----------------------------------------------------------------------===//

static LogicalResult checkNormParam(const OpDiag &diag, StringRef name,
                                    RankedTensorType x, Value param) {
  auto p = tensorOf(param);
  if (!p)
    return success();
  if (failed(sameElementType(diag, "x", x, name, p)))
    return failure();
  if (p.getRank() != 1 || p.getDimSize(0) != x.getShape().back())
    return diag("operand '", name, "' has shape ", shapeOf(p), ", expected [",
                x.getShape().back(), "] (the last dimension of 'x')");
  return success();
}

static LogicalResult checkEps(const OpDiag &diag, const APFloat &eps) {
  float e = eps.convertToFloat();
  if (!(e >= 0.0f) || std::isinf(e))
    return diag("eps must be finite and >= 0, got ", e);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "layer_norm"};
  auto x = tensorOf(adaptor.getX());
  if (!x)
    return diag("operand 'x' must be a ranked tensor");
  if (x.getRank() < 1)
    return diag("operand 'x' must have rank >= 1 (it is normalized over its "
                "last dimension), got ",
                shapeOf(x));
  if (failed(checkNormParam(diag, "weight", x, adaptor.getWeight())) ||
      failed(checkNormParam(diag, "bias", x, adaptor.getBias())) ||
      failed(checkEps(diag, adaptor.getEps())))
    return failure();
  inferred.push_back(x);
  return success();
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "rms_norm"};
  auto x = tensorOf(adaptor.getX());
  if (!x)
    return diag("operand 'x' must be a ranked tensor");
  if (x.getRank() < 1)
    return diag("operand 'x' must have rank >= 1 (it is normalized over its "
                "last dimension), got ",
                shapeOf(x));
  if (failed(checkNormParam(diag, "weight", x, adaptor.getWeight())) ||
      failed(checkEps(diag, adaptor.getEps())))
    return failure();
  inferred.push_back(x);
  return success();
}

static LogicalResult inferSameWithDim(std::optional<Location> loc,
                                      StringRef name, Value xValue,
                                      int64_t dim,
                                      SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, name};
  auto x = tensorOf(xValue);
  if (!x)
    return diag("operand 'x' must be a ranked tensor");
  if (!normalizeDim(dim, x.getRank()))
    return diag("dim ", dim, " is out of range for operand of rank ",
                x.getRank());
  inferred.push_back(x);
  return success();
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferSameWithDim(loc, "softmax", adaptor.getX(),
                          (int64_t)adaptor.getDim(), inferred);
}

LogicalResult LogSoftmaxOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  return inferSameWithDim(loc, "log_softmax", adaptor.getX(),
                          (int64_t)adaptor.getDim(), inferred);
}

/// A positions operand (offset, position) that is 1-d holds one position per
/// row: its length must be the batch.
static LogicalResult checkRowPositions(const OpDiag &diag, StringRef name,
                                       Value positions, int64_t batch) {
  auto type = positions ? tensorOf(positions) : RankedTensorType();
  if (!type || type.getRank() == 0 || type.getDimSize(0) == batch)
    return success();
  return diag("operand '", name, "' has ", type.getDimSize(0),
              " positions (one per row), but the batch is ", batch);
}

/// The shape rule of attention, shared with attention_grad.
static LogicalResult inferAttention(OpDiag diag, AttentionOp::Adaptor adaptor,
                                    SmallVectorImpl<Type> &inferred) {
  if (failed(requireTensors(diag, {{"query", adaptor.getQuery()},
                                   {"key", adaptor.getKey()},
                                   {"value", adaptor.getValue()}})))
    return failure();
  auto q = tensorOf(adaptor.getQuery()), k = tensorOf(adaptor.getKey()),
       v = tensorOf(adaptor.getValue());
  for (auto [name, t] : {std::pair<StringRef, RankedTensorType>{"query", q},
                         {"key", k}, {"value", v}})
    if (t.getRank() != 4)
      return diag("operand '", name, "' must be [B, H, T, D], got ",
                  shapeOf(t));
  if (failed(sameElementType(diag, "query", q, "key", k)) ||
      failed(sameElementType(diag, "query", q, "value", v)))
    return failure();
  int64_t b = q.getDimSize(0), h = q.getDimSize(1), tq = q.getDimSize(2),
          d = q.getDimSize(3);
  // With one offset per row (serving), the queries may be the first rows of a
  // larger KV cache: rows past them are not read.
  auto offsetType = adaptor.getOffset() ? tensorOf(adaptor.getOffset())
                                        : RankedTensorType();
  const bool rowPrefix = offsetType && offsetType.getRank() == 1;
  const char *expected = rowPrefix ? ", expected at least " : ", expected ";
  if (rowPrefix ? k.getDimSize(0) < b : k.getDimSize(0) != b)
    return diag("operand 'key' has batch ", k.getDimSize(0), expected, b,
                " (from 'query')");
  if (v.getDimSize(0) != k.getDimSize(0))
    return diag("operand 'value' has batch ", v.getDimSize(0), ", expected ",
                k.getDimSize(0), " (from 'key')");
  int64_t hkv = k.getDimSize(1);
  if (h % hkv != 0)
    return diag("key/value heads (", hkv, ") must divide query heads (", h,
                ")");
  if (v.getDimSize(1) != hkv)
    return diag("operand 'value' has ", v.getDimSize(1),
                " heads, expected ", hkv, " (from 'key')");
  if (k.getDimSize(3) != d)
    return diag("operand 'key' has head dim ", k.getDimSize(3),
                ", expected ", d, " (from 'query')");
  if (v.getDimSize(2) != k.getDimSize(2))
    return diag("operand 'value' has length ", v.getDimSize(2),
                ", expected ", k.getDimSize(2), " (from 'key')");
  if (auto scale = adaptor.getScale()) {
    float s = scale->convertToFloat();
    if (!std::isfinite(s) || s <= 0.0f)
      return diag("scale must be finite and > 0, got ", s);
  }
  if (!adaptor.getCausal() && adaptor.getOffset())
    return diag("'offset' only has a meaning with 'causal'");
  if (failed(checkRowPositions(diag, "offset", adaptor.getOffset(), b)))
    return failure();
  if (adaptor.getCausal() && !adaptor.getOffset() && tq > k.getDimSize(2))
    return diag("causal attention with more queries (", tq, ") than keys (",
                k.getDimSize(2), ") needs an explicit 'offset'");
  inferred.push_back(
      RankedTensorType::get({b, h, tq, v.getDimSize(3)}, q.getElementType()));
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferAttention(OpDiag{loc, "attention"}, adaptor, inferred);
}

float AttentionOp::getEffectiveScale() {
  if (auto s = getScale())
    return s->convertToFloat();
  return 1.0f / std::sqrt((float)getQuery().getType().getDimSize(3));
}

LogicalResult RotaryOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "rotary"};
  auto x = tensorOf(adaptor.getX());
  if (!x)
    return diag("operand 'x' must be a ranked tensor");
  if (x.getRank() != 4)
    return diag("operand 'x' must be [B, H, T, D], got ", shapeOf(x));
  if (x.getDimSize(3) % 2 != 0)
    return diag("operand 'x' ", shapeOf(x), " has head dim D = ",
                x.getDimSize(3), ", which must be even");
  float theta = adaptor.getTheta().convertToFloat();
  if (!std::isfinite(theta) || theta <= 1.0f)
    return diag("theta must be finite and > 1, got ", theta);
  if (Value f = adaptor.getFrequencies()) {
    auto freq = tensorOf(f);
    int64_t half = x.getDimSize(3) / 2;
    if (!freq || freq.getRank() != 1 || freq.getDimSize(0) != half ||
        !freq.getElementType().isF32())
      return diag("operand 'frequencies' must be a [", half,
                  "] f32 tensor (one per pair of the head dim ",
                  x.getDimSize(3), "), got ", f.getType());
  }
  if (failed(checkRowPositions(diag, "offset", adaptor.getOffset(),
                               x.getDimSize(0))))
    return failure();
  inferred.push_back(x);
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "embedding"};
  if (failed(requireTensors(diag, {{"table", adaptor.getTable()},
                                   {"ids", adaptor.getIds()}})))
    return failure();
  auto table = tensorOf(adaptor.getTable()), ids = tensorOf(adaptor.getIds());
  if (table.getRank() != 2)
    return diag("operand 'table' must be [V, D], got ", shapeOf(table));
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  int64_t from = numElements(getX().getType().getShape());
  int64_t to = numElements(getType().getShape());
  if (from != to)
    return emitOpError("cannot reshape ")
           << shapeOf(getX().getType()) << " (" << from << " elements) to "
           << shapeOf(getType()) << " (" << to << " elements)";
  if (getX().getType().getElementType() != getType().getElementType())
    return emitOpError("result element type ")
           << getType().getElementType() << " differs from operand's "
           << getX().getType().getElementType();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType())
    return getX();
  if (auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(adaptor.getX()))
    return dense.reshape(getType());
  return {};
}

namespace {
/// reshape(reshape(x)) -> reshape(x): only the final shape matters.
struct FoldReshapeChain : public OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getX().getDefiningOp<ReshapeOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "operand is not a reshape");
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), inner.getX());
    return success();
  }
};

/// transpose(transpose(x, p1), p2) -> transpose(x, p1 o p2).
struct FoldTransposeChain : public OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getX().getDefiningOp<TransposeOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "operand is not a transpose");
    SmallVector<int64_t> perm;
    for (int64_t p : op.getPerm())
      perm.push_back(inner.getPerm()[p]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, inner.getX(), perm);
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<FoldReshapeChain>(context);
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "transpose"};
  auto x = tensorOf(adaptor.getX());
  if (!x)
    return diag("operand 'x' must be a ranked tensor");
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if ((int64_t)perm.size() != x.getRank())
    return diag("perm has ", perm.size(), " entries but operand has rank ",
                x.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.getRank() || seen[p])
      return diag("perm ", formatShape(perm),
                  " is not a permutation of [0, ", x.getRank(), ")");
    seen[p] = true;
    shape.push_back(x.getDimSize(p));
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if ((int64_t)i != p)
      return {};
  return getX();
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<FoldTransposeChain>(context);
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "concat"};
  auto inputs = adaptor.getInputs();
  if (inputs.empty())
    return diag("needs at least one input");
  auto first = tensorOf(inputs[0]);
  if (!first)
    return diag("input #0 must be a ranked tensor");
  auto dim = normalizeDim((int64_t)adaptor.getDim(), first.getRank());
  if (!dim)
    return diag("dim ", (int64_t)adaptor.getDim(),
                " is out of range for inputs of rank ", first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, value] : llvm::enumerate(inputs.drop_front())) {
    auto t = tensorOf(value);
    size_t index = i + 1;
    if (!t)
      return diag("input #", index, " must be a ranked tensor");
    if (t.getElementType() != first.getElementType())
      return diag("input #", index, " has element type ", t.getElementType(),
                  " but input #0 has ", first.getElementType());
    if (t.getRank() != first.getRank())
      return diag("input #", index, " has rank ", t.getRank(),
                  " but input #0 has rank ", first.getRank());
    for (int64_t d = 0; d < first.getRank(); ++d) {
      if (d == *dim)
        continue;
      if (t.getDimSize(d) != first.getDimSize(d))
        return diag("input #", index, " ", shapeOf(t),
                    " differs from input #0 ", shapeOf(first), " in dimension ",
                    d, " (only dimension ", *dim, " may differ)");
    }
    shape[*dim] += t.getDimSize(*dim);
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs()[0];
  return {};
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "slice"};
  auto x = tensorOf(adaptor.getX());
  if (!x)
    return diag("operand 'x' must be a ranked tensor");
  ArrayRef<int64_t> start = adaptor.getStart(), limit = adaptor.getLimit(),
                    stride = adaptor.getStride();
  if ((int64_t)start.size() != x.getRank() ||
      (int64_t)limit.size() != x.getRank() ||
      (int64_t)stride.size() != x.getRank())
    return diag("start, limit and stride need ", x.getRank(),
                " entries each (the operand's rank), got ", start.size(), ", ",
                limit.size(), " and ", stride.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < x.getRank(); ++d) {
    if (start[d] < 0 || start[d] >= limit[d] || limit[d] > x.getDimSize(d))
      return diag("dimension ", d, ": need 0 <= start < limit <= ",
                  x.getDimSize(d), ", got start ", start[d], " and limit ",
                  limit[d]);
    if (stride[d] < 1)
      return diag("dimension ", d, ": stride must be >= 1, got ", stride[d]);
    shape.push_back((limit[d] - start[d] + stride[d] - 1) / stride[d]);
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getX().getType() == getType() &&
      llvm::all_of(getStart(), [](int64_t s) { return s == 0; }))
    return getX();
  return {};
}

LogicalResult DynamicSliceOp::verify() {
  auto x = getX().getType(), result = getType();
  auto dim = normalizeDim((int64_t)getDim(), x.getRank());
  if (!dim)
    return emitOpError("dim ") << (int64_t)getDim()
                               << " is out of range for operand of rank "
                               << x.getRank();
  if (result.getRank() != x.getRank() ||
      result.getElementType() != x.getElementType())
    return emitOpError("result ")
           << result << " must have the operand's rank and element type ("
           << x << ")";
  for (int64_t d = 0; d < x.getRank(); ++d) {
    if (d == *dim) {
      if (result.getDimSize(d) > x.getDimSize(d))
        return emitOpError("result length ")
               << result.getDimSize(d) << " along dim " << d
               << " exceeds the operand's " << x.getDimSize(d);
    } else if (result.getDimSize(d) != x.getDimSize(d)) {
      return emitOpError("result ")
             << shapeOf(result) << " differs from operand " << shapeOf(x)
             << " in dimension " << d << ", which is not sliced";
    }
  }
  return success();
}

LogicalResult BroadcastToOp::verify() {
  auto x = getX().getType(), result = getType();
  if (x.getElementType() != result.getElementType())
    return emitOpError("result element type ")
           << result.getElementType() << " differs from operand's "
           << x.getElementType();
  if (!broadcastsTo(x.getShape(), result.getShape()))
    return emitOpError("operand ")
           << shapeOf(x) << " does not broadcast to " << shapeOf(result);
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType())
    return getX();
  if (auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(adaptor.getX()))
    if (dense.isSplat())
      return dense.resizeSplat(getType());
  return {};
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(std::optional<Location> loc, StringRef name,
                                 Value xValue, ArrayRef<int64_t> dims,
                                 bool keepdim,
                                 SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, name};
  auto x = tensorOf(xValue);
  if (!x)
    return diag("operand 'x' must be a ranked tensor");
  if (dims.empty())
    return diag("dims must name at least one dimension");
  SmallVector<bool> reduced(x.getRank(), false);
  for (int64_t d : dims) {
    auto n = normalizeDim(d, x.getRank());
    if (!n)
      return diag("dim ", d, " is out of range for operand of rank ",
                  x.getRank());
    if (reduced[*n])
      return diag("dim ", d, " is listed twice in ", formatShape(dims));
    reduced[*n] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < x.getRank(); ++d) {
    if (!reduced[d])
      shape.push_back(x.getDimSize(d));
    else if (keepdim)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

#define TFC_REDUCE_INFER(OP, NAME)                                             \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferReduce(loc, NAME, adaptor.getX(), adaptor.getDims(),           \
                       adaptor.getKeepdim(), inferred);                        \
  }
TFC_REDUCE_INFER(ReduceSumOp, "reduce_sum")
TFC_REDUCE_INFER(ReduceMeanOp, "reduce_mean")
TFC_REDUCE_INFER(ReduceMaxOp, "reduce_max")
#undef TFC_REDUCE_INFER

LogicalResult ArgmaxOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "argmax"};
  auto x = tensorOf(adaptor.getX());
  if (!x)
    return diag("operand 'x' must be a ranked tensor");
  if (x.getRank() < 2)
    return diag("operand 'x' must have rank >= 2 (the result keeps the other "
                "dimensions), got ",
                shapeOf(x));
  auto dim = normalizeDim((int64_t)adaptor.getDim(), x.getRank());
  if (!dim)
    return diag("dim ", (int64_t)adaptor.getDim(),
                " is out of range for operand of rank ", x.getRank());
  SmallVector<int64_t> shape(x.getShape());
  shape.erase(shape.begin() + *dim);
  inferred.push_back(
      RankedTensorType::get(shape, IntegerType::get(context, 32)));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses, sampling, KV caches
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *context,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "cross_entropy"};
  if (failed(requireTensors(diag, {{"logits", adaptor.getLogits()},
                                   {"targets", adaptor.getTargets()}})))
    return failure();
  auto logits = tensorOf(adaptor.getLogits());
  auto targets = tensorOf(adaptor.getTargets());
  if (logits.getRank() < 2)
    return diag("operand 'logits' must be [..., V] with rank >= 2, got ",
                shapeOf(logits));
  if (targets.getShape() != logits.getShape().drop_back())
    return diag("operand 'targets' has shape ", shapeOf(targets),
                ", expected ", formatShape(logits.getShape().drop_back()),
                " (the leading dimensions of 'logits' ", shapeOf(logits), ")");
  inferred.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  return success();
}

LogicalResult SampleOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "sample"};
  auto logits = tensorOf(adaptor.getLogits());
  if (!logits)
    return diag("operand 'logits' must be a ranked tensor");
  if (logits.getRank() != 2)
    return diag("operand 'logits' must be [B, V], got ", shapeOf(logits));
  inferred.push_back(RankedTensorType::get({logits.getDimSize(0)},
                                           IntegerType::get(context, 32)));
  return success();
}

LogicalResult KvCacheUpdateOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "kv_cache_update"};
  if (failed(requireTensors(diag, {{"cache", adaptor.getCache()},
                                   {"update", adaptor.getUpdate()}})))
    return failure();
  auto cache = tensorOf(adaptor.getCache());
  auto update = tensorOf(adaptor.getUpdate());
  if (failed(sameElementType(diag, "cache", cache, "update", update)))
    return failure();
  if (cache.getRank() != update.getRank())
    return diag("operand 'update' has rank ", update.getRank(),
                " but 'cache' has rank ", cache.getRank());
  auto dim = normalizeDim((int64_t)adaptor.getDim(), cache.getRank());
  if (!dim)
    return diag("dim ", (int64_t)adaptor.getDim(),
                " is out of range for a cache of rank ", cache.getRank());
  if (Value blocks = adaptor.getBlocks()) {
    // A paged cache: a pool of blocks [NB, Hkv, S, D], written through each
    // row's block table.
    auto table = tensorOf(blocks);
    auto position = tensorOf(adaptor.getPosition());
    if (cache.getRank() != 4 || *dim != 2)
      return diag("a paged cache ('blocks') must be [NB, Hkv, S, D] with "
                  "dim = 2, got ",
                  shapeOf(cache), " and dim ", (int64_t)adaptor.getDim());
    if (update.getDimSize(1) != cache.getDimSize(1) ||
        update.getDimSize(3) != cache.getDimSize(3))
      return diag("operand 'update' ", shapeOf(update),
                  " does not fit the blocks of 'cache' ", shapeOf(cache),
                  " (heads and head dim)");
    if (position.getRank() != 1)
      return diag("a paged cache needs one position per row (a 1-d "
                  "'position')");
    if (failed(checkRowPositions(diag, "position", adaptor.getPosition(),
                                 update.getDimSize(0))))
      return failure();
    if (table.getRank() != 2 || table.getDimSize(0) != update.getDimSize(0))
      return diag("operand 'blocks' must be [B, M] with B = ",
                  update.getDimSize(0), " (the update's rows), got ",
                  shapeOf(table));
    inferred.push_back(cache);
    return success();
  }
  // With one position per row, the update may hold the first rows of the
  // cache only (serving: the rows of the running sequences).
  const bool perRow = tensorOf(adaptor.getPosition()).getRank() == 1;
  for (int64_t d = 0; d < cache.getRank(); ++d) {
    if (d == *dim || (perRow && d == 0)
            ? update.getDimSize(d) > cache.getDimSize(d)
            : update.getDimSize(d) != cache.getDimSize(d))
      return diag("operand 'update' ", shapeOf(update),
                  " does not fit 'cache' ", shapeOf(cache), " in dimension ",
                  d);
  }
  if (perRow) {
    if (*dim == 0)
      return diag("one position per row (a 1-d 'position') needs dim > 0; "
                  "dim 0 is the rows");
    if (failed(checkRowPositions(diag, "position", adaptor.getPosition(),
                                 update.getDimSize(0))))
      return failure();
  }
  inferred.push_back(cache);
  return success();
}

LogicalResult PagedAttentionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "paged_attention"};
  if (failed(requireTensors(diag, {{"query", adaptor.getQuery()},
                                   {"key_pool", adaptor.getKeyPool()},
                                   {"value_pool", adaptor.getValuePool()},
                                   {"blocks", adaptor.getBlocks()},
                                   {"position", adaptor.getPosition()}})))
    return failure();
  auto q = tensorOf(adaptor.getQuery()), k = tensorOf(adaptor.getKeyPool()),
       v = tensorOf(adaptor.getValuePool());
  for (auto [name, t] : {std::pair<StringRef, RankedTensorType>{"query", q},
                         {"key_pool", k}, {"value_pool", v}})
    if (t.getRank() != 4)
      return diag("operand '", name, "' must be rank 4 ([B, H, Tq, D] or "
                  "[NB, Hkv, S, D]), got ", shapeOf(t));
  if (k.getElementType() != v.getElementType())
    return diag("'key_pool' and 'value_pool' must have one element type, got ",
                k.getElementType(), " and ", v.getElementType());
  int64_t b = q.getDimSize(0), h = q.getDimSize(1), hkv = k.getDimSize(1);
  if (h % hkv != 0)
    return diag("key/value heads (", hkv, ") must divide query heads (", h,
                ")");
  if (k.getDimSize(3) != q.getDimSize(3))
    return diag("operand 'key_pool' has head dim ", k.getDimSize(3),
                ", expected ", q.getDimSize(3), " (from 'query')");
  if (v.getDimSize(0) != k.getDimSize(0) || v.getDimSize(1) != hkv ||
      v.getDimSize(2) != k.getDimSize(2))
    return diag("operand 'value_pool' ", shapeOf(v),
                " does not match 'key_pool' ", shapeOf(k),
                " in blocks, heads or block size");
  auto table = tensorOf(adaptor.getBlocks());
  if (table.getRank() != 2 || table.getDimSize(0) != b)
    return diag("operand 'blocks' must be [B, M] with B = ", b,
                " (from 'query'), got ", shapeOf(table));
  auto position = tensorOf(adaptor.getPosition());
  if (position.getRank() != 1 || position.getDimSize(0) != b)
    return diag("operand 'position' must be [B] with B = ", b,
                " (one position per row), got ", shapeOf(position));
  if (auto scale = adaptor.getScale()) {
    float s = scale->convertToFloat();
    if (!std::isfinite(s) || s <= 0.0f)
      return diag("scale must be finite and > 0, got ", s);
  }
  inferred.push_back(RankedTensorType::get(
      {b, h, q.getDimSize(2), v.getDimSize(3)}, q.getElementType()));
  return success();
}

float PagedAttentionOp::getEffectiveScale() {
  if (auto s = getScale())
    return s->convertToFloat();
  return 1.0f / std::sqrt((float)getQuery().getType().getDimSize(3));
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult MoeRouteOp::inferReturnTypes(MLIRContext *context,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "moe_route"};
  auto logits = tensorOf(adaptor.getLogits());
  if (!logits)
    return diag("operand 'logits' must be a ranked tensor");
  if (logits.getRank() != 2)
    return diag("operand 'logits' must be [N, E], got ", shapeOf(logits));
  int64_t k = (int64_t)adaptor.getTopK();
  if (k < 1 || k > logits.getDimSize(1))
    return diag("top_k (", k, ") must be in [1, E] with E = ",
                logits.getDimSize(1), " experts");
  inferred.push_back(RankedTensorType::get({logits.getDimSize(0), k},
                                           IntegerType::get(context, 32)));
  return success();
}

namespace {

/// The operand contract of tfc.moe_ffn (shared with tfc.moe_ffn_grad):
/// x [N, D], ids [N, k], weights [N, E], then 3E experts (w1 [F, D],
/// w3 [F, D], w2 [D, F]) all of x's element type.
LogicalResult verifyMoeOperands(const OpDiag &diag, Value xValue,
                                Value idsValue, Value weightsValue,
                                ValueRange experts, int64_t firstExpert) {
  if (failed(requireTensors(diag, {{"x", xValue},
                                   {"ids", idsValue},
                                   {"weights", weightsValue}})))
    return failure();
  auto x = tensorOf(xValue), ids = tensorOf(idsValue),
       weights = tensorOf(weightsValue);
  if (x.getRank() != 2)
    return diag("operand 'x' must be [N, D], got ", shapeOf(x));
  const int64_t N = x.getDimSize(0), D = x.getDimSize(1);
  if (ids.getRank() != 2 || ids.getDimSize(0) != N)
    return diag("operand 'ids' must be [N, k] with N = ", N, ", got ",
                shapeOf(ids));
  if (experts.empty() || experts.size() % 3 != 0)
    return diag("expects 3 expert matrices per expert (w1, w3, w2), got ",
                experts.size());
  // The experts given are E' of the E that weights' columns count (all of
  // them unless expert parallel).
  const int64_t local = experts.size() / 3;
  if (failed(sameElementType(diag, "x", x, "weights", weights)))
    return failure();
  if (weights.getRank() != 2 || weights.getDimSize(0) != N)
    return diag("operand 'weights' has shape ", shapeOf(weights),
                ", expected [", N, ", E] (N tokens, E experts)");
  const int64_t E = weights.getDimSize(1);
  if (firstExpert < 0 || firstExpert + local > E)
    return diag("holds experts ", firstExpert, " to ", firstExpert + local - 1,
                " (first_expert ", firstExpert, ", ", local,
                " given), outside the ", E, " of operand 'weights'");
  if (ids.getDimSize(1) > E)
    return diag("operand 'ids' chooses ", ids.getDimSize(1),
                " experts per token but there are only ", E);
  auto first = tensorOf(experts[0]);
  if (!first || first.getRank() != 2 || first.getDimSize(1) != D)
    return diag("expert 0's w1 must be [F, D] with D = ", D, ", got ",
                experts[0].getType());
  const int64_t F = first.getDimSize(0);
  static const char *names[3] = {"w1", "w3", "w2"};
  for (auto [i, value] : llvm::enumerate(experts)) {
    auto t = tensorOf(value);
    SmallVector<int64_t> expected =
        i % 3 == 2 ? SmallVector<int64_t>{D, F} : SmallVector<int64_t>{F, D};
    if (!t || t.getShape() != ArrayRef<int64_t>(expected) ||
        t.getElementType() != x.getElementType())
      return diag("expert ", i / 3, "'s ", names[i % 3], " has type ",
                  value.getType(), ", expected ", formatShape(expected), " of ",
                  x.getElementType());
  }
  return success();
}

} // namespace

LogicalResult MoeFfnOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "moe_ffn"};
  // The adaptor of a builder that gives no attributes has none (the default).
  IntegerAttr first = adaptor.getFirstExpertAttr();
  if (failed(verifyMoeOperands(diag, adaptor.getX(), adaptor.getIds(),
                               adaptor.getWeights(), adaptor.getExperts(),
                               first ? first.getInt() : 0)))
    return failure();
  inferred.push_back(adaptor.getX().getType());
  return success();
}

LogicalResult MoeFfnGradOp::verify() {
  OpDiag diag{getLoc(), "moe_ffn_grad"};
  if (failed(verifyMoeOperands(diag, getX(), getIds(), getWeights(),
                               getExperts(), getFirstExpert())))
    return failure();
  if (getGrad().getType() != getX().getType())
    return diag("operand 'grad' has type ", getGrad().getType(),
                ", expected x's ", getX().getType());
  SmallVector<Type> expected = {getX().getType(), getWeights().getType()};
  for (Value e : getExperts())
    expected.push_back(e.getType());
  if (TypeRange(getResults().getTypes()) != TypeRange(expected))
    return diag("expects ", expected.size(),
                " results of the types of x, weights and the experts");
  return success();
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingGradOp::verify() {
  auto grad = getGrad().getType(), ids = getIds().getType();
  auto result = getType();
  if (result.getRank() != 2)
    return emitOpError("result must be [V, D], got ") << shapeOf(result);
  SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(result.getDimSize(1));
  if (grad.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("operand 'grad' has shape ")
           << shapeOf(grad) << ", expected " << formatShape(expected)
           << " (ids " << shapeOf(ids) << " + [D])";
  if (grad.getElementType() != result.getElementType())
    return emitOpError("result element type ")
           << result.getElementType() << " differs from 'grad' "
           << grad.getElementType();
  if (getInit() && getInit().getType() != result)
    return emitOpError("operand 'init' has type ")
           << getInit().getType() << ", expected the result's " << result;
  return success();
}

LogicalResult CrossEntropyGradOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "cross_entropy_grad"};
  auto logits = tensorOf(adaptor.getLogits());
  auto targets = tensorOf(adaptor.getTargets());
  if (!logits || !targets)
    return diag("operands must be ranked tensors");
  if (logits.getRank() < 2 ||
      targets.getShape() != logits.getShape().drop_back())
    return diag("operand 'targets' has shape ", shapeOf(targets),
                ", expected the leading dimensions of 'logits' ",
                shapeOf(logits));
  inferred.push_back(logits);
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  OpDiag diag{loc, "attention_grad"};
  SmallVector<Type> forward;
  AttentionOp::Properties properties;
  properties.causal = adaptor.getCausalAttr();
  properties.scale = adaptor.getScaleAttr();
  SmallVector<Value> operands = {adaptor.getQuery(), adaptor.getKey(),
                                 adaptor.getValue()};
  if (adaptor.getOffset())
    operands.push_back(adaptor.getOffset());
  if (failed(inferAttention(diag, AttentionOp::Adaptor(operands, nullptr,
                                                       properties),
                            forward)))
    return failure();
  auto out = tensorOf(adaptor.getOut()), gradOut = tensorOf(adaptor.getGradOut());
  if (!out || out != forward[0])
    return diag("operand 'out' has type ", adaptor.getOut().getType(),
                ", expected the attention result ", forward[0]);
  if (!gradOut || gradOut != forward[0])
    return diag("operand 'grad_out' has type ", adaptor.getGradOut().getType(),
                ", expected ", forward[0]);
  inferred.push_back(adaptor.getQuery().getType());
  inferred.push_back(adaptor.getKey().getType());
  inferred.push_back(adaptor.getValue().getType());
  return success();
}

float AttentionGradOp::getEffectiveScale() {
  if (auto s = getScale())
    return s->convertToFloat();
  return 1.0f / std::sqrt((float)getQuery().getType().getDimSize(3));
}

bool tfc::isElementwise(Operation *op) {
  return llvm::isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp, ExpOp,
                   LogOp, SqrtOp, RsqrtOp, TanhOp, SinOp, CosOp, SigmoidOp,
                   StepOp, NegOp, AbsOp, ReluOp, SiluOp, GeluOp, LeakyReluOp,
                   CastOp>(op);
}

//===----------------------------------------------------------------------===//
// fused
//===----------------------------------------------------------------------===//

namespace {

ArrayRef<int64_t> shapeOf(Type t) {
  return llvm::cast<RankedTensorType>(t).getShape();
}

bool isSplatConstantOp(Operation *op) {
  auto c = llvm::dyn_cast<ConstantOp>(op);
  auto dense = c ? llvm::dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  return dense && dense.isSplat();
}

/// Every op is elementwise over `space` (its result has that shape), a
/// broadcast_to into it of a kernel operand or constant, or a splat
/// constant.
LogicalResult verifyPointwiseBody(FusedOp fused,
                                  llvm::iterator_range<Block::iterator> ops,
                                  ArrayRef<int64_t> space) {
  for (Operation &op : ops) {
    if (isSplatConstantOp(&op))
      continue;
    if (!isElementwise(&op) && !llvm::isa<BroadcastToOp>(op))
      return fused.emitOpError("'")
             << op.getName() << "' cannot be part of a "
             << fused.getKind() << " kernel";
    if (shapeOf(op.getResult(0).getType()) != space)
      return fused.emitOpError("body op '")
             << op.getName() << "' has shape "
             << op.getResult(0).getType()
             << "; every op of the loop must have the iteration shape";
    if (auto bc = llvm::dyn_cast<BroadcastToOp>(op);
        bc && bc.getX().getDefiningOp() &&
        !isSplatConstantOp(bc.getX().getDefiningOp()))
      return fused.emitOpError("broadcast_to in a fused body must read an "
                               "operand of the kernel or a splat constant");
  }
  return success();
}

/// A pointwise prologue over the reduction's input, then the reduction, whose
/// f32 value is the only one yielded.
LogicalResult verifyReductionBody(FusedOp fused, Block &body) {
  Operation *yield = body.getTerminator();
  Operation *reduce = yield->getNumOperands() == 1
                          ? yield->getOperand(0).getDefiningOp()
                          : nullptr;
  if (!reduce ||
      !llvm::isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(reduce) ||
      reduce->getNextNode() != yield)
    return fused.emitOpError("a reduction kernel yields one value, the "
                             "reduce_sum, reduce_mean or reduce_max that "
                             "ends its body");
  if (!llvm::cast<RankedTensorType>(reduce->getResult(0).getType())
           .getElementType()
           .isF32())
    return fused.emitOpError("a reduction kernel accumulates and stores f32");
  return verifyPointwiseBody(
      fused, llvm::make_range(body.begin(), reduce->getIterator()),
      shapeOf(reduce->getOperand(0).getType()));
}

/// A pointwise prologue over the row op's input, then layer_norm, rms_norm,
/// softmax or log_softmax of it over the last dimension (f32), whose result
/// is yielded with any prologue values. The prologue reads rows of the
/// iteration shape, vectors along the row or scalars; the norm's weight and
/// bias are operands of the kernel.
LogicalResult verifyRowBody(FusedOp fused, Block &body) {
  Operation *yield = body.getTerminator();
  Operation *row = yield->getPrevNode();
  auto isArg = [&](Value v) {
    return !v || (llvm::isa<BlockArgument>(v) &&
                  llvm::cast<BlockArgument>(v).getOwner() == &body);
  };
  bool rowOp = false;
  if (auto ln = llvm::dyn_cast_or_null<LayerNormOp>(row))
    rowOp = isArg(ln.getWeight()) && isArg(ln.getBias());
  else if (auto rn = llvm::dyn_cast_or_null<RmsNormOp>(row))
    rowOp = isArg(rn.getWeight());
  else if (auto sm = llvm::dyn_cast_or_null<SoftmaxOp>(row))
    rowOp = static_cast<int64_t>(sm.getDim()) == -1 ||
            static_cast<int64_t>(sm.getDim()) ==
                sm.getType().getRank() - 1;
  else if (auto ls = llvm::dyn_cast_or_null<LogSoftmaxOp>(row))
    rowOp = static_cast<int64_t>(ls.getDim()) == -1 ||
            static_cast<int64_t>(ls.getDim()) ==
                ls.getType().getRank() - 1;
  if (!rowOp || !llvm::is_contained(yield->getOperands(), row->getResult(0)) ||
      !llvm::cast<RankedTensorType>(row->getResult(0).getType())
           .getElementType()
           .isF32())
    return fused.emitOpError(
        "a row kernel ends with layer_norm, rms_norm, softmax or log_softmax "
        "(f32, over the last dimension; weight and bias operands of the "
        "kernel) and yields its result");
  ArrayRef<int64_t> space = shapeOf(row->getOperand(0).getType());
  for (BlockArgument arg : body.getArguments()) {
    auto type = llvm::cast<RankedTensorType>(arg.getType());
    bool rowShaped = type.getShape() == space ||
                     (type.getRank() > 0 && type.getShape().back() == space.back() &&
                      type.getNumElements() == space.back()) ||
                     type.getNumElements() == 1;
    if (!rowShaped && llvm::any_of(arg.getUsers(),
                                   [&](Operation *u) { return u != row; }))
      return fused.emitOpError("operand #")
             << arg.getArgNumber() << " of type " << type
             << " is not a row, a vector along the row or a scalar";
  }
  return verifyPointwiseBody(
      fused, llvm::make_range(body.begin(), row->getIterator()), space);
}

/// linear on kernel operands, then optionally gelu (tanh), relu, silu or
/// leaky_relu of it, then optionally the add of a kernel operand: what the
/// library's epilogue applies.
LogicalResult verifyLinearBody(FusedOp fused, Block &body) {
  auto fail = [&]() {
    return fused.emitOpError(
        "a linear kernel is tfc.linear on its operands, then "
        "optionally gelu (tanh), relu, silu or leaky_relu of it, then "
        "optionally an add of an operand of the same type, and yields the "
        "last");
  };
  auto isArg = [&](Value v) {
    return v && llvm::isa<BlockArgument>(v) &&
           llvm::cast<BlockArgument>(v).getOwner() == &body;
  };
  auto it = body.begin();
  auto linear = llvm::dyn_cast<LinearOp>(*it);
  if (!linear || !isArg(linear.getX()) || !isArg(linear.getWeight()) ||
      (linear.getBias() && !isArg(linear.getBias())))
    return fail();
  Value chain = linear.getResult();
  Operation *op = &*++it;
  if (op->getNumOperands() == 1 && op->getOperand(0) == chain &&
      (llvm::isa<ReluOp, SiluOp, LeakyReluOp>(op) ||
       (llvm::isa<GeluOp>(op) &&
        llvm::cast<GeluOp>(op).getApproximate() == GeluApproximation::Tanh))) {
    chain = op->getResult(0);
    op = &*++it;
  }
  if (auto add = llvm::dyn_cast<AddOp>(op)) {
    Value other = add.getLhs() == chain ? add.getRhs() : add.getLhs();
    if ((add.getLhs() != chain && add.getRhs() != chain) || !isArg(other) ||
        other.getType() != chain.getType() || add.getType() != chain.getType())
      return fail();
    chain = add.getResult();
    op = &*++it;
  }
  if (op != body.getTerminator() || op->getNumOperands() != 1 ||
      op->getOperand(0) != chain)
    return fail();
  return success();
}

} // namespace

LogicalResult FusedOp::verify() {
  if (getKind() != "pointwise" && getKind() != "reduction" &&
      getKind() != "row" && getKind() != "linear")
    return emitOpError("kind '") << getKind()
                                 << "' is not one of 'pointwise', 'reduction', "
                                    "'row', 'linear'";
  return success();
}

LogicalResult FusedOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments, expected one per operand ("
           << getInputs().size() << ")";
  for (auto [i, arg, input] :
       llvm::enumerate(body.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("body argument #")
             << i << " has type " << arg.getType() << ", expected the operand's "
             << input.getType();
  auto yield = llvm::dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with tfc.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().getTypes() << ", expected the result types "
           << getResultTypes();
  if (getNumResults() == 0)
    return emitOpError("must have at least one result");
  // What codegen assumes of each kind (FusedKernels.cpp), checked here so
  // that a hand-written group cannot compile to something else.
  if (getKind() == "pointwise")
    return verifyPointwiseBody(*this, body.without_terminator(),
                               shapeOf(getResult(0).getType()));
  if (getKind() == "reduction")
    return verifyReductionBody(*this, body);
  if (getKind() == "row")
    return verifyRowBody(*this, body);
  return verifyLinearBody(*this, body);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace {
/// The checks every collective shares: a group name (`hint`: the usual one),
/// a size, and, for the reducing ones, the reduction.
LogicalResult verifyGroup(const OpDiag &diag, StringRef group, int64_t size,
                          StringRef hint = "dp") {
  if (group.empty())
    return diag("needs a non-empty group name (\"", hint, "\")");
  if (size < 1)
    return diag("group size ", size, " must be at least 1");
  return success();
}

LogicalResult verifyReduce(const OpDiag &diag, StringRef reduce) {
  if (reduce != "sum" && reduce != "mean")
    return diag("reduce '", reduce, "' is not 'sum' or 'mean'");
  return success();
}

/// The result of a collective that divides (reduce_scatter) or multiplies
/// (all_gather) the leading dimension of `x` by the group's size.
LogicalResult inferBlocks(const OpDiag &diag, Value operand, int64_t size,
                          bool scatter, SmallVectorImpl<Type> &inferred) {
  auto x = tensorOf(operand);
  if (!x)
    return diag("operand 'x' must be a ranked tensor");
  if (x.getRank() < 1)
    return diag("operand 'x' must have a leading dimension to ",
                scatter ? "scatter" : "gather", ", got a 0-d tensor");
  if (size < 1)
    return diag("group size ", size, " must be at least 1");
  SmallVector<int64_t> shape(x.getShape());
  if (scatter) {
    if (shape[0] % size != 0)
      return diag("leading dimension ", shape[0], " of ", shapeOf(x),
                  " is not divisible by the group size ", size,
                  " (pad it to a multiple of ", size, ")");
    shape[0] /= size;
  } else {
    shape[0] *= size;
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}
} // namespace

LogicalResult AllReduceOp::verify() {
  OpDiag diag{getLoc(), "all_reduce"};
  if (failed(verifyGroup(diag, getGroup(), getSize())))
    return failure();
  return verifyReduce(diag, getReduce());
}


LogicalResult
ReduceScatterOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  return inferBlocks(OpDiag{loc, "reduce_scatter"}, adaptor.getX(),
                     adaptor.getSize(), /*scatter=*/true, inferred);
}

LogicalResult ReduceScatterOp::verify() {
  OpDiag diag{getLoc(), "reduce_scatter"};
  if (failed(verifyGroup(diag, getGroup(), getSize())))
    return failure();
  return verifyReduce(diag, getReduce());
}

LogicalResult AllGatherOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferBlocks(OpDiag{loc, "all_gather"}, adaptor.getX(),
                     adaptor.getSize(), /*scatter=*/false, inferred);
}

LogicalResult AllGatherOp::verify() {
  return verifyGroup(OpDiag{getLoc(), "all_gather"}, getGroup(), getSize());
}

LogicalResult AllToAllOp::verify() {
  OpDiag diag{getLoc(), "all_to_all"};
  if (failed(verifyGroup(diag, getGroup(), getSize(), "ep")))
    return failure();
  // The result's type is the operand's; inferBlocks checks that the leading
  // dimension splits into one block per rank.
  SmallVector<Type> scattered;
  return inferBlocks(diag, getX(), getSize(), /*scatter=*/true, scattered);
}

LogicalResult CopyToGroupOp::verify() {
  return verifyGroup(OpDiag{getLoc(), "copy_to_group"}, getGroup(), getSize(),
                     "tp");
}

LogicalResult AllReduceStartOp::verify() {
  OpDiag diag{getLoc(), "all_reduce_start"};
  if (failed(verifyGroup(diag, getGroup(), getSize())) ||
      failed(verifyReduce(diag, getReduce())))
    return failure();
  if (getXs().empty())
    return emitOpError("needs at least one tensor");
  if (getXs().getTypes() != getPending().getTypes())
    return emitOpError("results must have the operands' types, in order");
  return success();
}

/// A point-to-point message's addressing: a group, a peer and a tag that
/// the MPI transport can carry (MPI guarantees tags up to 32767).
static LogicalResult verifyPointToPoint(Operation *op, StringRef group,
                                        int64_t peer, int64_t tag) {
  if (group.empty())
    return op->emitOpError("needs a non-empty group name (\"pp\")");
  if (peer < 0)
    return op->emitOpError("peer ") << peer << " must be a rank (0 or more)";
  if (tag < 0 || tag > 32767)
    return op->emitOpError("tag ")
           << tag << " must be in [0, 32767] (the tags MPI guarantees)";
  return success();
}

LogicalResult SendOp::verify() {
  return verifyPointToPoint(*this, getGroup(), getPeer(), getTag());
}

LogicalResult RecvOp::verify() {
  return verifyPointToPoint(*this, getGroup(), getPeer(), getTag());
}

LogicalResult AllReduceWaitOp::verify() {
  // The pairing with the start (same bucket, all its results in order) is
  // tfc-data-parallel's construction; it is not checked here because a
  // kernel's body (tfc-lower-to-kernels) holds either op alone.
  if (getPending().empty())
    return emitOpError("needs at least one tensor");
  if (getPending().getTypes() != getResults().getTypes())
    return emitOpError("results must have the operands' types, in order");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/tfc/TfcOps.cpp.inc"
