//===- RowKernels.cpp - reductions, norms, softmax, losses ----------------===//
//
// Ops that combine the elements of a "line" of a tensor: softmax,
// log_softmax, layer_norm, rms_norm, argmax and cross_entropy along one
// dimension, and reduce_sum/mean/max over any set of dimensions.
//
// The single-dimension ops view their buffers as flat 1-D memrefs and walk
// every line along the dimension with explicit index arithmetic (see DimSplit
// in KernelEmitters.h): a line is base + j * inner for j in [0, size). Each
// line is traversed a few times (max, then sum, then write), which keeps the
// code simple and numerically stable. Float arithmetic is done in f32 for
// every float type; 16-bit results are rounded once, at the store.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/KernelEmitters.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;

namespace tfc::cpu {
namespace {

Value f32Const(OpBuilder &b, Location loc, double v) {
  return floatConst(b, loc, b.getF32Type(), v);
}

/// One line of a flat buffer: elements base + j * stride.
struct Line {
  Value memref; // flat (1-D)
  Value base;
  int64_t stride;

  /// Element j, widened to the compute type.
  Value load(OpBuilder &b, Location loc, Value j) const {
    Value v = b.create<memref::LoadOp>(
        loc, memref, ValueRange{lineIndex(b, loc, base, j, stride)});
    return widen(b, loc, v);
  }
  /// Stores `v` (in the compute type) as element j.
  void store(OpBuilder &b, Location loc, Value v, Value j) const {
    v = narrow(b, loc, v, elementTypeOf(memref));
    b.create<memref::StoreOp>(loc, v, memref,
                              ValueRange{lineIndex(b, loc, base, j, stride)});
  }
};

/// acc + v for a sum along a line: reassociable, so that LLVM vectorizes the
/// loop with partial sums per lane instead of one serial chain of adds
/// (4 cycles each). The order is then the vectorizer's, fixed for a compiled
/// loop: a line is never split over threads, so a result does not depend on
/// them.
Value accumulate(OpBuilder &b, Location loc, Value acc, Value v) {
  return b.create<arith::AddFOp>(
      loc, acc, v,
      arith::FastMathFlagsAttr::get(b.getContext(),
                                    arith::FastMathFlags::reassoc));
}

/// The maximum of a float line (NaN-propagating, like torch.max).
Value lineMax(OpBuilder &b, Location loc, const Line &x, int64_t n) {
  Value init = x.load(b, loc, indexConst(b, loc, 0));
  return reduceRange(b, loc, 1, n, init,
                     [&](OpBuilder &nb, Location l, Value j, ValueRange acc) {
                       Value v = x.load(nb, l, j);
                       return SmallVector<Value>{
                           nb.create<arith::MaximumFOp>(l, acc[0], v)};
                     })[0];
}

/// sum_j exp(x[j] - max).
Value lineSumExp(OpBuilder &b, Location loc, const Line &x, int64_t n,
                 Value max) {
  return reduceRange(
      b, loc, 0, n, f32Const(b, loc, 0.0),
      [&](OpBuilder &nb, Location l, Value j, ValueRange acc) {
        Value e = nb.create<math::ExpOp>(
            l, nb.create<arith::SubFOp>(l, x.load(nb, l, j), max));
        return SmallVector<Value>{accumulate(nb, l, acc[0], e)};
      })[0];
}

/// sum_j f(x[j]) in f32.
Value lineSum(OpBuilder &b, Location loc, const Line &x, int64_t n,
              llvm::function_ref<Value(OpBuilder &, Location, Value)> f) {
  return reduceRange(b, loc, 0, n, f32Const(b, loc, 0.0),
                     [&](OpBuilder &nb, Location l, Value j, ValueRange acc) {
                       Value v = f(nb, l, x.load(nb, l, j));
                       return SmallVector<Value>{accumulate(nb, l, acc[0], v)};
                     })[0];
}

/// Rejects an op whose float operands are not one of the supported types
/// (the verifier already restricts them; this guards future types).
bool checkFloat(Operation *op, Value memref) {
  Type t = elementTypeOf(memref);
  if (t.isF32() || t.isF16() || t.isBF16())
    return true;
  op->emitError("CPU codegen: ")
      << op->getName() << " on " << t << " is not supported";
  return false;
}

int64_t normalizedDim(int64_t dim, int64_t rank) {
  return dim < 0 ? dim + rank : dim;
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax
//===----------------------------------------------------------------------===//

/// y = exp(x - max) / sum, or x - max - log(sum) for log_softmax: the max is
/// subtracted first so that exp never overflows. Every element of x is read
/// before y[j] is written after x[j], so y may be x.
void softmaxLine(OpBuilder &b, Location loc, const Line &x, const Line &y,
                 int64_t n, bool log) {
  Value max = lineMax(b, loc, x, n);
  Value sum = lineSumExp(b, loc, x, n, max);
  Value logSum = log ? b.create<math::LogOp>(loc, sum).getResult() : Value();
  forRange(b, loc, n, [&](OpBuilder &b, Location loc, Value j) {
    Value shifted = b.create<arith::SubFOp>(loc, x.load(b, loc, j), max);
    Value r = log ? b.create<arith::SubFOp>(loc, shifted, logSum).getResult()
                  : b.create<arith::DivFOp>(
                         loc, b.create<math::ExpOp>(loc, shifted), sum)
                        .getResult();
    y.store(b, loc, r, j);
  });
}

bool emitSoftmax(OpBuilder &b, Operation *op, int64_t dim, bool log,
                 Value input, Value output) {
  if (!checkFloat(op, input))
    return false;
  Location loc = op->getLoc();
  ArrayRef<int64_t> shape = shapeOf(input);
  DimSplit split = splitAtDim(shape, normalizedDim(dim, shape.size()));
  Value xf = flatten(b, loc, input), yf = flatten(b, loc, output);
  forEachLine(b, loc, split, [&](OpBuilder &b, Location loc, Value base) {
    softmaxLine(b, loc, Line{xf, base, split.inner},
                Line{yf, base, split.inner}, split.size, log);
  });
  return true;
}

//===----------------------------------------------------------------------===//
// layer_norm, rms_norm
//===----------------------------------------------------------------------===//

/// Normalizes one row of n elements. `center` subtracts the mean
/// (layer_norm: two passes, mean, then the biased variance of x - mean, which
/// does not cancel catastrophically as E[x^2] - E[x]^2 can); rms_norm does
/// not. y = (x - shift) / sqrt(meanSquare + eps) * weight + bias, with weight
/// and bias (1-D, length n) optional. The row is read before y[j] is written
/// after x[j], so y may be x.
void normLine(OpBuilder &b, Location loc, bool center, double eps,
              const Line &x, const Line &y, Value weight, Value bias,
              int64_t n) {
  Value zero = indexConst(b, loc, 0);
  Line w{weight, zero, 1}, bi{bias, zero, 1};
  Value count = f32Const(b, loc, static_cast<double>(n));
  Value mean;
  if (center)
    mean = b.create<arith::DivFOp>(
        loc,
        lineSum(b, loc, x, n, [](OpBuilder &, Location, Value v) { return v; }),
        count);
  Value sumSq = lineSum(b, loc, x, n, [&](OpBuilder &b, Location l, Value v) {
    if (mean)
      v = b.create<arith::SubFOp>(l, v, mean);
    return b.create<arith::MulFOp>(l, v, v).getResult();
  });
  Value variance = b.create<arith::DivFOp>(loc, sumSq, count);
  Value denom = b.create<math::SqrtOp>(
      loc, b.create<arith::AddFOp>(loc, variance, f32Const(b, loc, eps)));
  Value inv = b.create<arith::DivFOp>(loc, f32Const(b, loc, 1.0), denom);
  forRange(b, loc, n, [&](OpBuilder &b, Location loc, Value j) {
    Value v = x.load(b, loc, j);
    if (mean)
      v = b.create<arith::SubFOp>(loc, v, mean);
    v = b.create<arith::MulFOp>(loc, v, inv);
    if (weight)
      v = b.create<arith::MulFOp>(loc, v, w.load(b, loc, j));
    if (bias)
      v = b.create<arith::AddFOp>(loc, v, bi.load(b, loc, j));
    y.store(b, loc, v, j);
  });
}

/// Normalizes every row (the last dimension) of `input` into `output`.
void emitNorm(OpBuilder &b, Location loc, bool center, double eps, Value input,
              Value weight, Value bias, Value output) {
  ArrayRef<int64_t> shape = shapeOf(input);
  int64_t n = shape.back();
  DimSplit split = splitAtDim(shape, shape.size() - 1);
  Value xf = flatten(b, loc, input), yf = flatten(b, loc, output);
  forEachLine(b, loc, split, [&](OpBuilder &b, Location loc, Value base) {
    normLine(b, loc, center, eps, Line{xf, base, 1}, Line{yf, base, 1}, weight,
             bias, n);
  });
}

//===----------------------------------------------------------------------===//
// reduce_sum, reduce_mean, reduce_max
//===----------------------------------------------------------------------===//

} // namespace

void emitReduceLoops(OpBuilder &b, Location loc, ReduceKind kind,
                     ArrayRef<int64_t> dims, bool keepdim,
                     ArrayRef<int64_t> shape, Type elem, ElementAt valueAt,
                     Value output) {
  int64_t rank = shape.size();
  bool isFloatElem = llvm::isa<FloatType>(elem);
  Type acc = computeType(elem);

  llvm::SmallVector<bool> reduced(rank, false);
  for (int64_t d : dims)
    reduced[normalizedDim(d, rank)] = true;
  SmallVector<Value> keptUbs, reducedUbs;
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      reducedUbs.push_back(indexConst(b, loc, shape[d]));
      count *= shape[d];
    } else {
      keptUbs.push_back(indexConst(b, loc, shape[d]));
    }
  }

  // The accumulator's identity.
  Value init;
  if (kind != ReduceKind::Max) {
    init = b.create<arith::ConstantOp>(loc, b.getZeroAttr(acc));
  } else if (isFloatElem) {
    init = f32Const(b, loc, -std::numeric_limits<double>::infinity());
  } else {
    unsigned width = acc.getIntOrFloatBitWidth();
    init = b.create<arith::ConstantOp>(
        loc, b.getIntegerAttr(acc, llvm::APInt::getSignedMinValue(width)));
  }

  auto combine = [&](OpBuilder &b, Location l, Value a, Value v) -> Value {
    if (kind == ReduceKind::Max)
      return isFloatElem ? b.create<arith::MaximumFOp>(l, a, v).getResult()
                         : b.create<arith::MaxSIOp>(l, a, v).getResult();
    return isFloatElem ? accumulate(b, l, a, v)
                       : b.create<arith::AddIOp>(l, a, v).getResult();
  };

  auto zeros = [&](size_t n) {
    return SmallVector<Value>(n, indexConst(b, loc, 0));
  };
  auto ones = [&](size_t n) {
    return SmallVector<Value>(n, indexConst(b, loc, 1));
  };

  // Column reductions: the reduced dimensions lead and one kept dimension is
  // last (a bias's gradient: [B, T, C] summed over B and T). Reducing each
  // column on its own walks the input with stride C and does not vectorize;
  // instead blocks of columns accumulate in the output, row after row, so
  // that the innermost loop runs along a row (and vectorizes across
  // columns). Each element folds its rows in row order, on one thread.
  // Only where the output has the accumulator's type (a 16-bit output would
  // round every partial sum).
  bool columns = rank >= 2 && !reduced[rank - 1] &&
                 elementTypeOf(output) == acc &&
                 llvm::all_of(llvm::seq<int64_t>(0, rank - 1),
                              [&](int64_t d) { return reduced[d]; });
  if (columns) {
    constexpr int64_t kBlock = 64;
    int64_t width = shape[rank - 1];
    int64_t blocks = (width + kBlock - 1) / kBlock;
    Value out = flatten(b, loc, output);
    parallelRange(b, loc, blocks, [&](OpBuilder &b, Location loc, Value blk) {
      Value lo = b.create<arith::MulIOp>(loc, blk, indexConst(b, loc, kBlock));
      Value hi = b.create<arith::MinSIOp>(
          loc, b.create<arith::AddIOp>(loc, lo, indexConst(b, loc, kBlock)),
          indexConst(b, loc, width));
      Value one = indexConst(b, loc, 1);
      auto forColumns = [&](OpBuilder &b, Location loc, LoopBody body) {
        b.create<scf::ForOp>(loc, lo, hi, one, ValueRange{},
                             [&](OpBuilder &nb, Location nloc, Value c,
                                 ValueRange) {
                               body(nb, nloc, c);
                               nb.create<scf::YieldOp>(nloc);
                             });
      };
      forColumns(b, loc, [&](OpBuilder &b, Location loc, Value c) {
        b.create<memref::StoreOp>(loc, init, out, c);
      });
      scf::buildLoopNest(
          b, loc, zeros(reducedUbs.size()), reducedUbs,
          ones(reducedUbs.size()),
          [&](OpBuilder &b, Location loc, ValueRange rows) {
            forColumns(b, loc, [&](OpBuilder &b, Location loc, Value c) {
              SmallVector<Value> indices(rows);
              indices.push_back(c);
              Value sum = combine(b, loc,
                                  b.create<memref::LoadOp>(loc, out, c),
                                  valueAt(b, loc, indices));
              b.create<memref::StoreOp>(loc, sum, out, c);
            });
          });
      if (kind == ReduceKind::Mean)
        forColumns(b, loc, [&](OpBuilder &b, Location loc, Value c) {
          Value mean = b.create<arith::DivFOp>(
              loc, b.create<memref::LoadOp>(loc, out, c),
              f32Const(b, loc, static_cast<double>(count)));
          b.create<memref::StoreOp>(loc, mean, out, c);
        });
    });
    return;
  }
  // Each kept index reduces into its own output element: a parallel loop
  // over the kept dimensions, the reduction serial inside it (a fixed order).
  auto forEachKept = [&](auto &&keptBody) {
    if (keptUbs.empty())
      return keptBody(b, loc, ValueRange{});
    b.create<scf::ParallelOp>(loc, zeros(keptUbs.size()), keptUbs,
                              ones(keptUbs.size()), keptBody);
  };
  forEachKept(
      [&](OpBuilder &b, Location loc, ValueRange kept) {
        auto inner = scf::buildLoopNest(
            b, loc, zeros(reducedUbs.size()), reducedUbs,
            ones(reducedUbs.size()), ValueRange{init},
            [&](OpBuilder &b, Location loc, ValueRange red,
                ValueRange accs) -> scf::ValueVector {
              // Interleave the kept and reduced induction variables back
              // into the input's dimension order.
              SmallVector<Value> indices;
              unsigned k = 0, r = 0;
              for (int64_t d = 0; d < rank; ++d)
                indices.push_back(reduced[d] ? red[r++] : kept[k++]);
              return {combine(b, loc, accs[0], valueAt(b, loc, indices))};
            });
        Value result = inner.results.empty() ? init : inner.results[0];
        if (kind == ReduceKind::Mean)
          result = b.create<arith::DivFOp>(
              loc, result, f32Const(b, loc, static_cast<double>(count)));
        SmallVector<Value> outIndices;
        unsigned k = 0;
        for (int64_t d = 0; d < rank; ++d) {
          if (!reduced[d])
            outIndices.push_back(kept[k++]);
          else if (keepdim)
            outIndices.push_back(indexConst(b, loc, 0));
        }
        b.create<memref::StoreOp>(
            loc, narrow(b, loc, result, elementTypeOf(output)), output,
            outIndices);
      });
}

namespace {

/// reduce_sum, reduce_mean, reduce_max over any set of dimensions, with or
/// without keepdim, including all of them (a 0-d result).
bool emitReduce(OpBuilder &b, Operation *op, ReduceKind kind,
                ArrayRef<int64_t> dims, bool keepdim, Value input,
                Value output) {
  Type elem = elementTypeOf(input);
  if (llvm::isa<FloatType>(elem) && !checkFloat(op, input))
    return false;
  Location loc = op->getLoc();
  // Leading dimensions reduced, several trailing ones kept (the seed model's
  // per-example weight gradients, [64, 4, 8, 8] summed over the 64): the
  // column reduction of the contiguous view [R, K], whose inner loop runs
  // along a row instead of striding over the reduced dimension. Each output
  // element folds its values in row order, whatever the thread count.
  ArrayRef<int64_t> shape = shapeOf(input);
  const int64_t rank = static_cast<int64_t>(shape.size());
  SmallVector<bool> reduced(rank, false);
  for (int64_t d : dims)
    reduced[normalizedDim(d, rank)] = true;
  int64_t lead = 0;
  while (lead < rank && reduced[lead])
    ++lead;
  if (lead > 0 && lead < rank - 1 &&
      llvm::none_of(llvm::seq<int64_t>(lead, rank),
                    [&](int64_t d) { return reduced[d]; })) {
    ReassociationIndices rows = llvm::to_vector(llvm::seq<int64_t>(0, lead));
    ReassociationIndices cols = llvm::to_vector(llvm::seq<int64_t>(lead, rank));
    Value matrix = b.create<memref::CollapseShapeOp>(
        loc, input, SmallVector<ReassociationIndices>{rows, cols});
    emitReduceLoops(b, loc, kind, {0}, /*keepdim=*/false, shapeOf(matrix),
                    elem,
                    [&](OpBuilder &b, Location loc, ValueRange indices) {
                      return widen(b, loc, b.create<memref::LoadOp>(
                                               loc, matrix, indices));
                    },
                    flatten(b, loc, output));
    return true;
  }
  emitReduceLoops(b, loc, kind, dims, keepdim, shape, elem,
                  [&](OpBuilder &b, Location loc, ValueRange indices) {
                    return widen(b, loc,
                                 b.create<memref::LoadOp>(loc, input, indices));
                  },
                  output);
  return true;
}

//===----------------------------------------------------------------------===//
// argmax
//===----------------------------------------------------------------------===//

/// The index of the first maximum along `dim` (first on ties; the first NaN
/// if any, as PyTorch treats NaN as the largest value), as i32.
bool emitArgmax(OpBuilder &b, ArgmaxOp op, Value input, Value output) {
  Location loc = op.getLoc();
  Type elem = elementTypeOf(input);
  bool isFloatElem = llvm::isa<FloatType>(elem);
  if (isFloatElem && !checkFloat(op, input))
    return false;
  ArrayRef<int64_t> shape = shapeOf(input);
  DimSplit split =
      splitAtDim(shape, normalizedDim(static_cast<int64_t>(op.getDim()),
                                      shape.size()));
  Value xf = flatten(b, loc, input), yf = flatten(b, loc, output);
  // The result drops `dim`: line (o, i) is element o * inner + i, i.e. the
  // line's base with the `size` factor removed from the outer part.
  parallelRange(b, loc, split.outer, [&](OpBuilder &b, Location loc, Value o) {
    forRange(b, loc, split.inner, [&](OpBuilder &b, Location loc, Value i) {
      Value base = b.create<arith::AddIOp>(
          loc,
          b.create<arith::MulIOp>(
              loc, o, indexConst(b, loc, split.size * split.inner)),
          i);
      Line x{xf, base, split.inner};
      Value first = x.load(b, loc, indexConst(b, loc, 0));
      auto best = reduceRange(
          b, loc, 1, split.size, ValueRange{first, indexConst(b, loc, 0)},
          [&](OpBuilder &b, Location l, Value j, ValueRange acc) {
            Value v = x.load(b, l, j);
            Value better;
            if (isFloatElem) {
              Value greater = b.create<arith::CmpFOp>(
                  l, arith::CmpFPredicate::OGT, v, acc[0]);
              Value vNan = b.create<arith::CmpFOp>(
                  l, arith::CmpFPredicate::UNO, v, v);
              Value bestOrdered = b.create<arith::CmpFOp>(
                  l, arith::CmpFPredicate::ORD, acc[0], acc[0]);
              better = b.create<arith::OrIOp>(
                  l, greater, b.create<arith::AndIOp>(l, vNan, bestOrdered));
            } else {
              better = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::sgt, v,
                                               acc[0]);
            }
            return SmallVector<Value>{
                b.create<arith::SelectOp>(l, better, v, acc[0]),
                b.create<arith::SelectOp>(l, better, j, acc[1])};
          });
      Value outIndex = b.create<arith::AddIOp>(
          loc, b.create<arith::MulIOp>(loc, o, indexConst(b, loc, split.inner)),
          i);
      Value index =
          b.create<arith::IndexCastOp>(loc, elementTypeOf(output), best[1]);
      b.create<memref::StoreOp>(loc, index, yf, ValueRange{outIndex});
    });
  });
  return true;
}

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

/// mean over counted rows of logsumexp(row) - row[target]. A row counts when
/// its target is not ignore_index; a target outside [0, V) is reported with
/// tfc_kernels_error and skipped (never read out of bounds).
bool emitCrossEntropy(OpBuilder &b, CrossEntropyOp op, ValueRange operands,
                      Value output) {
  Location loc = op.getLoc();
  Value logits = operands[0], targets = operands[1];
  if (!checkFloat(op, logits))
    return false;
  ArrayRef<int64_t> shape = shapeOf(logits);
  int64_t vocab = shape.back();
  int64_t rows = numElements(shape) / vocab;
  Value lf = flatten(b, loc, logits), tf = flatten(b, loc, targets);
  Type i64 = b.getI64Type();
  Value ignore = b.create<arith::ConstantOp>(
      loc, b.getI64IntegerAttr(static_cast<int64_t>(op.getIgnoreIndex())));
  Value zeroI = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(0));
  Value vocabI = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(vocab));
  Value zeroF = f32Const(b, loc, 0.0), oneF = f32Const(b, loc, 1.0);

  // Each row's loss and whether it counts, in parallel (a vocabulary-wide
  // pass per row), into scratch; then their sums in row order, so that the
  // mean does not depend on the threads.
  auto rowsType = MemRefType::get({rows}, b.getF32Type());
  Value rowLoss = b.create<memref::AllocOp>(loc, rowsType);
  Value rowCount = b.create<memref::AllocOp>(loc, rowsType);
  parallelRange(b, loc, rows, [&](OpBuilder &b, Location l, Value r) {
    Value t = b.create<memref::LoadOp>(l, tf, ValueRange{r});
    if (t.getType() != i64)
      t = b.create<arith::ExtSIOp>(l, i64, t);
    Value ignored =
        b.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, t, ignore);
    Value inRange = b.create<arith::AndIOp>(
        l, b.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge, t, zeroI),
        b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, t, vocabI));
    SmallVector<Value> none{zeroF, zeroF};
    auto ifIgnored = b.create<scf::IfOp>(
        l, ignored,
        [&](OpBuilder &b, Location l) { b.create<scf::YieldOp>(l, none); },
        [&](OpBuilder &b, Location l) {
          auto ifValid = b.create<scf::IfOp>(
              l, inRange,
              [&](OpBuilder &b, Location l) {
                Value base =
                    b.create<arith::MulIOp>(l, r, indexConst(b, l, vocab));
                Line x{lf, base, 1};
                Value max = lineMax(b, l, x, vocab);
                Value lse = b.create<arith::AddFOp>(
                    l, max,
                    b.create<math::LogOp>(l,
                                          lineSumExp(b, l, x, vocab, max)));
                Value target =
                    b.create<arith::IndexCastOp>(l, b.getIndexType(), t);
                Value loss =
                    b.create<arith::SubFOp>(l, lse, x.load(b, l, target));
                b.create<scf::YieldOp>(l, ValueRange{loss, oneF});
              },
              [&](OpBuilder &b, Location l) {
                emitRuntimeError(b, l, op,
                                 "cross_entropy: target out of range");
                b.create<scf::YieldOp>(l, none);
              });
          b.create<scf::YieldOp>(l, ifValid.getResults());
        });
    b.create<memref::StoreOp>(l, ifIgnored.getResult(0), rowLoss, r);
    b.create<memref::StoreOp>(l, ifIgnored.getResult(1), rowCount, r);
  });
  auto totals = reduceRange(
      b, loc, 0, rows, ValueRange{zeroF, zeroF},
      [&](OpBuilder &b, Location l, Value r, ValueRange acc) {
        return SmallVector<Value>{
            b.create<arith::AddFOp>(
                l, acc[0], b.create<memref::LoadOp>(l, rowLoss, r)),
            b.create<arith::AddFOp>(
                l, acc[1], b.create<memref::LoadOp>(l, rowCount, r))};
      });
  b.create<memref::DeallocOp>(loc, rowLoss);
  b.create<memref::DeallocOp>(loc, rowCount);
  // 0 when no row counts (0 / 0 would be NaN).
  Value any = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT,
                                      totals[1], zeroF);
  Value mean = b.create<arith::DivFOp>(loc, totals[0], totals[1]);
  Value result = b.create<arith::SelectOp>(loc, any, mean, zeroF);
  b.create<memref::StoreOp>(loc, result, output, ValueRange{});
  return true;
}

//===----------------------------------------------------------------------===//
// cross_entropy_grad
//===----------------------------------------------------------------------===//

/// Rows up to this long keep their exps in a stack row (emitCrossEntropyGrad).
constexpr int64_t kStackRowMax = 256;

/// dlogits = (softmax(row) - onehot(target)) * grad / count for counted rows,
/// 0 for ignored ones; count as in cross_entropy. Out-of-range targets are
/// reported and their rows zeroed.
bool emitCrossEntropyGrad(OpBuilder &b, CrossEntropyGradOp op,
                          ValueRange operands, Value output) {
  Location loc = op.getLoc();
  Value logits = operands[0], targets = operands[1];
  if (!checkFloat(op, logits))
    return false;
  ArrayRef<int64_t> shape = shapeOf(logits);
  int64_t vocab = shape.back();
  int64_t rows = numElements(shape) / vocab;
  Value lf = flatten(b, loc, logits), tf = flatten(b, loc, targets),
        of = flatten(b, loc, output);
  Type i64 = b.getI64Type();
  Value ignore = b.create<arith::ConstantOp>(
      loc, b.getI64IntegerAttr(static_cast<int64_t>(op.getIgnoreIndex())));
  Value zeroI = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(0));
  Value vocabI = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(vocab));
  Value zeroF = f32Const(b, loc, 0.0), oneF = f32Const(b, loc, 1.0);
  auto targetAt = [&](OpBuilder &b, Location l, Value r) {
    Value t = b.create<memref::LoadOp>(l, tf, ValueRange{r});
    if (t.getType() != i64)
      t = b.create<arith::ExtSIOp>(l, i64, t);
    return t;
  };
  auto counted = [&](OpBuilder &b, Location l, Value t) {
    Value kept = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::ne, t, ignore);
    Value inRange = b.create<arith::AndIOp>(
        l, b.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge, t, zeroI),
        b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, t, vocabI));
    return std::pair{kept, inRange};
  };
  // The count of counted rows, as in the forward loss.
  Value count = reduceRange(
      b, loc, 0, rows, zeroF,
      [&](OpBuilder &b, Location l, Value r, ValueRange acc) {
        auto [kept, inRange] = counted(b, l, targetAt(b, l, r));
        Value both = b.create<arith::AndIOp>(l, kept, inRange);
        Value add = b.create<arith::SelectOp>(l, both, oneF, zeroF);
        return SmallVector<Value>{b.create<arith::AddFOp>(l, acc[0], add)};
      })[0];
  Value g = widen(b, loc, loadScalar(b, loc, operands[2]));
  Value any = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, count,
                                      zeroF);
  Value scale = b.create<arith::SelectOp>(
      loc, any, b.create<arith::DivFOp>(loc, g, count), zeroF);
  parallelRange(b, loc, rows, [&](OpBuilder &b, Location l, Value r) {
    Value base = b.create<arith::MulIOp>(l, r, indexConst(b, l, vocab));
    Line x{lf, base, 1}, y{of, base, 1};
    Value t = targetAt(b, l, r);
    auto [kept, inRange] = counted(b, l, t);
    auto zeroRow = [&](OpBuilder &b, Location l) {
      forRange(b, l, vocab, [&](OpBuilder &b, Location l, Value j) {
        y.store(b, l, f32Const(b, l, 0.0), j);
      });
    };
    b.create<scf::IfOp>(
        l, kept,
        [&](OpBuilder &b, Location l) {
          b.create<scf::IfOp>(
              l, inRange,
              [&](OpBuilder &b, Location l) {
                Value max = lineMax(b, l, x, vocab);
                Value target =
                    b.create<arith::IndexCastOp>(l, b.getIndexType(), t);
                // d_j = p_j * scale / sum, minus scale at the target, where
                // p_j = expAt(j) = exp(x_j - max).
                auto writeRow = [&](Value sum,
                                    function_ref<Value(OpBuilder &, Location,
                                                       Value)>
                                        expAt) {
                  Value factor = b.create<arith::DivFOp>(l, scale, sum);
                  forRange(b, l, vocab, [&](OpBuilder &b, Location l, Value j) {
                    Value d =
                        b.create<arith::MulFOp>(l, expAt(b, l, j), factor);
                    Value isTarget = b.create<arith::CmpIOp>(
                        l, arith::CmpIPredicate::eq, j, target);
                    d = b.create<arith::SelectOp>(
                        l, isTarget, b.create<arith::SubFOp>(l, d, scale), d);
                    y.store(b, l, d, j);
                  });
                };
                if (vocab > kStackRowMax) {
                  writeRow(lineSumExp(b, l, x, vocab, max),
                           [&](OpBuilder &b, Location l, Value j) -> Value {
                             return b.create<math::ExpOp>(
                                 l, b.create<arith::SubFOp>(
                                        l, x.load(b, l, j), max));
                           });
                  b.create<scf::YieldOp>(l);
                  return;
                }
                // A short row (the seed experiment's 12 classes) keeps its
                // exps in a stack row, written as they are summed. A loop
                // that reads the logits and writes the gradient needs a
                // run-time overlap check, which LLVM refuses for fewer than
                // 16 iterations: it stayed scalar, 12 exps a row. The stack
                // row aliases neither, so both loops vectorize.
                // stacksave/stackrestore bound the stack, one row at a time.
                Value sp = b.create<LLVM::StackSaveOp>(
                    l, LLVM::LLVMPointerType::get(b.getContext()));
                Value row = b.create<memref::AllocaOp>(
                    l, MemRefType::get({vocab}, b.getF32Type()));
                Line e{row, indexConst(b, l, 0), 1};
                Value sum = reduceRange(
                    b, l, 0, vocab, f32Const(b, l, 0.0),
                    [&](OpBuilder &nb, Location l, Value j, ValueRange acc) {
                      Value v = nb.create<math::ExpOp>(
                          l, nb.create<arith::SubFOp>(l, x.load(nb, l, j),
                                                      max));
                      e.store(nb, l, v, j);
                      return SmallVector<Value>{accumulate(nb, l, acc[0], v)};
                    })[0];
                writeRow(sum, [&](OpBuilder &b, Location l, Value j) {
                  return e.load(b, l, j);
                });
                b.create<LLVM::StackRestoreOp>(l, sp);
                b.create<scf::YieldOp>(l);
              },
              [&](OpBuilder &b, Location l) {
                emitRuntimeError(b, l, op,
                                 "cross_entropy_grad: target out of range");
                zeroRow(b, l);
                b.create<scf::YieldOp>(l);
              });
          b.create<scf::YieldOp>(l);
        },
        [&](OpBuilder &b, Location l) {
          zeroRow(b, l);
          b.create<scf::YieldOp>(l);
        });
  });
  return true;
}

} // namespace

LogicalResult emitRowOpInPlace(OpBuilder &b, Operation *op, Value rows,
                               Value base, int64_t n, Value weight,
                               Value bias) {
  Location loc = op->getLoc();
  Line row{rows, base, 1};
  if (auto ln = llvm::dyn_cast<LayerNormOp>(op))
    normLine(b, loc, /*center=*/true, ln.getEps().convertToDouble(), row, row,
             weight, bias, n);
  else if (auto rn = llvm::dyn_cast<RmsNormOp>(op))
    normLine(b, loc, /*center=*/false, rn.getEps().convertToDouble(), row, row,
             weight, Value(), n);
  else if (llvm::isa<SoftmaxOp, LogSoftmaxOp>(op))
    softmaxLine(b, loc, row, row, n, llvm::isa<LogSoftmaxOp>(op));
  else
    return op->emitError("CPU codegen: '")
           << op->getName() << "' is not a row op of a fused kernel";
  return success();
}

FailureOr<bool> emitRowKernel(OpBuilder &b, Operation *op, ValueRange operands,
                              ValueRange results) {
  Location loc = op->getLoc();
  return llvm::TypeSwitch<Operation *, FailureOr<bool>>(op)
      .Case([&](SoftmaxOp s) {
        return emitSoftmax(b, op, static_cast<int64_t>(s.getDim()),
                           /*log=*/false, operands[0], results[0]);
      })
      .Case([&](LogSoftmaxOp s) {
        return emitSoftmax(b, op, static_cast<int64_t>(s.getDim()),
                           /*log=*/true, operands[0], results[0]);
      })
      .Case([&](LayerNormOp ln) -> FailureOr<bool> {
        for (Value v : operands)
          if (!checkFloat(op, v))
            return false;
        // Optional operands follow x in declaration order.
        unsigned next = 1;
        Value weight = ln.getWeight() ? operands[next++] : Value();
        Value bias = ln.getBias() ? operands[next++] : Value();
        emitNorm(b, loc, /*center=*/true, ln.getEps().convertToDouble(),
                 operands[0], weight, bias, results[0]);
        return true;
      })
      .Case([&](RmsNormOp rn) -> FailureOr<bool> {
        for (Value v : operands)
          if (!checkFloat(op, v))
            return false;
        Value weight = rn.getWeight() ? operands[1] : Value();
        emitNorm(b, loc, /*center=*/false, rn.getEps().convertToDouble(),
                 operands[0], weight, Value(), results[0]);
        return true;
      })
      .Case([&](ReduceSumOp r) {
        return emitReduce(b, op, ReduceKind::Sum, r.getDims(), r.getKeepdim(),
                          operands[0], results[0]);
      })
      .Case([&](ReduceMeanOp r) {
        return emitReduce(b, op, ReduceKind::Mean, r.getDims(), r.getKeepdim(),
                          operands[0], results[0]);
      })
      .Case([&](ReduceMaxOp r) {
        return emitReduce(b, op, ReduceKind::Max, r.getDims(), r.getKeepdim(),
                          operands[0], results[0]);
      })
      .Case([&](ArgmaxOp a) {
        return emitArgmax(b, a, operands[0], results[0]);
      })
      .Case([&](CrossEntropyOp ce) {
        return emitCrossEntropy(b, ce, operands, results[0]);
      })
      .Case([&](CrossEntropyGradOp ce) {
        return emitCrossEntropyGrad(b, ce, operands, results[0]);
      })
      .Default([](Operation *) { return failure(); });
}

} // namespace tfc::cpu
