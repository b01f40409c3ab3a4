//===- DataMovementKernels.cpp - gathers, slices, caches, transposes ------===//
//
// Ops that move elements rather than combine them: transpose, concat, slice,
// dynamic_slice, broadcast_to, embedding and the KV cache write, plus the
// generators iota, rotary and dropout.
//
// Static windows are memref.subview + an element-wise copy (linalg.copy, which
// lowers to loops: memref.copy of a strided view would need the MLIR runtime
// library's memrefCopy, which artifacts do not link). Run-time positions
// (embedding ids, dynamic_slice start, the cache position) are checked in the
// generated code; a bad one is reported through tfc_kernels_error and never
// causes an out-of-bounds access.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/KernelEmitters.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace tfc::cpu {
namespace {

int64_t normalizedDim(int64_t dim, int64_t rank) {
  return dim < 0 ? dim + rank : dim;
}

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  SmallVector<OpFoldResult> r;
  for (int64_t v : values)
    r.push_back(b.getIndexAttr(v));
  return r;
}

/// The window of `memref` of shape `sizes` whose offset along `dim` is
/// `offset` (static or run-time; 0 along every other dimension), unit strides.
Value windowAlong(OpBuilder &b, Location loc, Value memref, int64_t dim,
                  OpFoldResult offset, ArrayRef<int64_t> sizes) {
  SmallVector<OpFoldResult> offsets(sizes.size(), b.getIndexAttr(0));
  offsets[dim] = offset;
  SmallVector<int64_t> strides(sizes.size(), 1);
  return b.create<memref::SubViewOp>(loc, memref, offsets,
                                     indexAttrs(b, sizes),
                                     indexAttrs(b, strides));
}

Value i64Const(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(v));
}

/// A run-time integer (i32 or i64) as i64.
Value toI64(OpBuilder &b, Location loc, Value v) {
  if (v.getType().isInteger(64))
    return v;
  return b.create<arith::ExtSIOp>(loc, b.getI64Type(), v);
}

//===----------------------------------------------------------------------===//
// Shape ops: transpose, concat, slice, dynamic_slice, broadcast_to
//===----------------------------------------------------------------------===//

/// A transpose that keeps its trailing dimensions in place (a head split or
/// merge, [B, T, H, D] <-> [B, H, T, D]) moves contiguous runs. When a run is
/// short (the seed model's D = 8: 32 bytes), LLVM unrolls the loop over it
/// and vectorizes the next one instead, with a gather per vector; so each run
/// is one memref.copy of two contiguous views (an inline memcpy), in a
/// parallel loop over the other dimensions. Longer runs keep linalg.transpose,
/// whose innermost loop vectorizes along the run.
constexpr int64_t kShortRunBytes = 256;

void emitTranspose(OpBuilder &b, TransposeOp op, Value input, Value output) {
  Location loc = op.getLoc();
  ArrayRef<int64_t> perm = op.getPerm();
  ArrayRef<int64_t> outShape = shapeOf(output);
  const int64_t rank = static_cast<int64_t>(perm.size());
  int64_t kept = 0;
  while (kept < rank && perm[rank - 1 - kept] == rank - 1 - kept)
    ++kept;
  const int64_t outer = rank - kept;
  int64_t runBytes = llvm::divideCeil(
      cast<MemRefType>(output.getType()).getElementTypeBitWidth(), 8);
  for (int64_t d = outer; d < rank; ++d)
    runBytes *= outShape[d];
  if (kept == 0 || outer == 0 || runBytes >= kShortRunBytes) {
    // linalg.transpose has tfc's convention: result dim i is input dim
    // perm[i].
    b.create<linalg::TransposeOp>(loc, input, output, perm);
    return;
  }
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t d = 0; d < outer; ++d) {
    lbs.push_back(indexConst(b, loc, 0));
    ubs.push_back(indexConst(b, loc, outShape[d]));
    steps.push_back(indexConst(b, loc, 1));
  }
  b.create<scf::ParallelOp>(
      loc, lbs, ubs, steps, [&](OpBuilder &nb, Location nloc, ValueRange ivs) {
        SmallVector<OpFoldResult> inOffsets(rank, nb.getIndexAttr(0));
        SmallVector<OpFoldResult> outOffsets(rank, nb.getIndexAttr(0));
        SmallVector<int64_t> sizes(rank, 1);
        for (int64_t d = 0; d < outer; ++d) {
          outOffsets[d] = ivs[d];
          inOffsets[perm[d]] = ivs[d];
        }
        for (int64_t d = outer; d < rank; ++d)
          sizes[d] = outShape[d];
        SmallVector<int64_t> runShape(outShape.begin() + outer,
                                      outShape.end());
        SmallVector<OpFoldResult> sizeAttrs = indexAttrs(nb, sizes);
        SmallVector<OpFoldResult> unitStrides =
            indexAttrs(nb, SmallVector<int64_t>(rank, 1));
        auto view = [&](Value memref, ArrayRef<OpFoldResult> offsets) {
          auto type =
              cast<MemRefType>(memref::SubViewOp::inferRankReducedResultType(
                  runShape, cast<MemRefType>(memref.getType()), offsets,
                  sizeAttrs, unitStrides));
          return nb.create<memref::SubViewOp>(nloc, type, memref, offsets,
                                              sizeAttrs, unitStrides);
        };
        nb.create<memref::CopyOp>(nloc, view(input, inOffsets),
                                  view(output, outOffsets));
      });
}

void emitConcat(OpBuilder &b, ConcatOp op, ValueRange inputs, Value output) {
  Location loc = op.getLoc();
  int64_t rank = shapeOf(output).size();
  int64_t dim = normalizedDim(static_cast<int64_t>(op.getDim()), rank);
  int64_t offset = 0;
  for (Value in : inputs) {
    ArrayRef<int64_t> shape = shapeOf(in);
    Value window =
        windowAlong(b, loc, output, dim, b.getIndexAttr(offset), shape);
    copyElements(b, loc, in, window);
    offset += shape[dim];
  }
}

void emitSlice(OpBuilder &b, SliceOp op, Value input, Value output) {
  Location loc = op.getLoc();
  Value window = b.create<memref::SubViewOp>(
      loc, input, indexAttrs(b, op.getStart()),
      indexAttrs(b, shapeOf(output)), indexAttrs(b, op.getStride()));
  copyElements(b, loc, window, output);
}

/// Clamps start to [0, size - length] (as XLA does), so the window is always
/// in bounds.
void emitDynamicSlice(OpBuilder &b, DynamicSliceOp op, Value input,
                      Value start, Value output) {
  Location loc = op.getLoc();
  int64_t rank = shapeOf(input).size();
  int64_t dim = normalizedDim(static_cast<int64_t>(op.getDim()), rank);
  int64_t maxStart = shapeOf(input)[dim] - shapeOf(output)[dim];
  Value s = toI64(b, loc, loadScalar(b, loc, start));
  s = b.create<arith::MaxSIOp>(loc, s, i64Const(b, loc, 0));
  s = b.create<arith::MinSIOp>(loc, s, i64Const(b, loc, maxStart));
  Value offset = b.create<arith::IndexCastOp>(loc, b.getIndexType(), s);
  copyElements(b, loc,
               windowAlong(b, loc, input, dim, offset, shapeOf(output)),
               output);
}

void emitBroadcastTo(OpBuilder &b, Location loc, Value input, Value output) {
  ArrayRef<int64_t> outShape = shapeOf(output);
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps = {
      broadcastMap(ctx, shapeOf(input), outShape),
      AffineMap::getMultiDimIdentityMap(outShape.size(), ctx)};
  SmallVector<utils::IteratorType> iterators(outShape.size(),
                                             utils::IteratorType::parallel);
  b.create<linalg::GenericOp>(
      loc, ValueRange{input}, ValueRange{output}, maps, iterators,
      [](OpBuilder &nb, Location l, ValueRange args) {
        nb.create<linalg::YieldOp>(l, args[0]);
      });
}

//===----------------------------------------------------------------------===//
// Generators: iota, rotary, dropout
//===----------------------------------------------------------------------===//

/// result[..., i_dim, ...] = i_dim, converted to the element type.
void emitIota(OpBuilder &b, IotaOp op, Value output) {
  Location loc = op.getLoc();
  ArrayRef<int64_t> shape = shapeOf(output);
  int64_t dim =
      normalizedDim(static_cast<int64_t>(op.getDim()), shape.size());
  MLIRContext *ctx = b.getContext();
  SmallVector<utils::IteratorType> iterators(shape.size(),
                                             utils::IteratorType::parallel);
  b.create<linalg::GenericOp>(
      loc, ValueRange{}, ValueRange{output},
      AffineMap::getMultiDimIdentityMap(shape.size(), ctx), iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Type elem = args[0].getType();
        Value i = nb.create<linalg::IndexOp>(l, dim);
        Value v;
        if (llvm::isa<FloatType>(elem))
          v = nb.create<arith::SIToFPOp>(
              l, elem, nb.create<arith::IndexCastOp>(l, nb.getI64Type(), i));
        else
          v = nb.create<arith::IndexCastOp>(l, elem, i);
        nb.create<linalg::YieldOp>(l, v);
      });
}

/// Rotate-half rotary embedding over x [B, H, T, D]. For token t (position
/// p = offset + t) and i < D/2, with f_i = theta^(-2i/D) and a = p * f_i:
///   y[i]       = x[i] cos a - x[i + D/2] sin a
///   y[i + D/2] = x[i + D/2] cos a + x[i] sin a
/// The angle and its cosine/sine are computed in f64 and rounded to f32:
/// p * f_i in f32 loses digits once positions reach the thousands. With a
/// `frequencies` operand, f_i is its entry i instead.
void emitRotary(OpBuilder &b, RotaryOp op, ValueRange operands,
                Value output) {
  Location loc = op.getLoc();
  Value input = operands[0];
  ArrayRef<int64_t> shape = shapeOf(input);
  int64_t d = shape.back(), half = d / 2, t = shape[shape.size() - 2];
  int64_t rows = numElements(shape) / d;
  Type f64 = b.getF64Type(), f32 = b.getF32Type();
  // A 1-d offset is one per row of the batch (dimension 0), read in the loop.
  bool perRow = op.getOffset() && !shapeOf(operands[1]).empty();
  Value offset = !op.getOffset() ? i64Const(b, loc, 0)
                 : perRow        ? Value()
                                 : toI64(b, loc, loadScalar(b, loc, operands[1]));
  int64_t rowsPerBatch = rows / shape[0];
  Value frequencies =
      op.getFrequencies() ? operands[op.getOffset() ? 2 : 1] : Value();
  // f_i = exp(i * c) with c = -2 ln(theta) / D.
  double theta = op.getTheta().convertToDouble();
  Value c = floatConst(b, loc, f64, -2.0 * std::log(theta) / d);
  Value xf = flatten(b, loc, input), yf = flatten(b, loc, output);
  Type elem = elementTypeOf(output);
  parallelRange(b, loc, rows, [&](OpBuilder &b, Location loc, Value r) {
    Value tok = b.create<arith::RemUIOp>(loc, r, indexConst(b, loc, t));
    Value first = offset;
    if (perRow) {
      Value batchRow =
          b.create<arith::DivUIOp>(loc, r, indexConst(b, loc, rowsPerBatch));
      first = toI64(b, loc,
                    b.create<memref::LoadOp>(loc, operands[1], batchRow));
    }
    Value pos = b.create<arith::AddIOp>(
        loc, first, b.create<arith::IndexCastOp>(loc, b.getI64Type(), tok));
    Value p = b.create<arith::SIToFPOp>(loc, f64, pos);
    Value base = b.create<arith::MulIOp>(loc, r, indexConst(b, loc, d));
    forRange(b, loc, half, [&](OpBuilder &b, Location loc, Value i) {
      Value freq;
      if (frequencies) {
        freq = b.create<arith::ExtFOp>(
            loc, f64, b.create<memref::LoadOp>(loc, frequencies, i).getResult());
      } else {
        Value fi = b.create<arith::SIToFPOp>(
            loc, f64, b.create<arith::IndexCastOp>(loc, b.getI64Type(), i));
        freq = b.create<math::ExpOp>(loc, b.create<arith::MulFOp>(loc, fi, c));
      }
      Value angle = b.create<arith::MulFOp>(loc, p, freq);
      Value cos = b.create<arith::TruncFOp>(
          loc, f32, b.create<math::CosOp>(loc, angle));
      Value sin = b.create<arith::TruncFOp>(
          loc, f32, b.create<math::SinOp>(loc, angle));
      // The inverse rotation (rotary's VJP) turns by -angle.
      if (op.getInverse())
        sin = b.create<arith::NegFOp>(loc, sin);
      Value i1 = b.create<arith::AddIOp>(loc, base, i);
      Value i2 = b.create<arith::AddIOp>(loc, i1, indexConst(b, loc, half));
      Value x1 = widen(b, loc, b.create<memref::LoadOp>(loc, xf, i1));
      Value x2 = widen(b, loc, b.create<memref::LoadOp>(loc, xf, i2));
      Value y1 = b.create<arith::SubFOp>(
          loc, b.create<arith::MulFOp>(loc, x1, cos),
          b.create<arith::MulFOp>(loc, x2, sin));
      Value y2 = b.create<arith::AddFOp>(
          loc, b.create<arith::MulFOp>(loc, x2, cos),
          b.create<arith::MulFOp>(loc, x1, sin));
      b.create<memref::StoreOp>(loc, narrow(b, loc, y1, elem), yf, i1);
      b.create<memref::StoreOp>(loc, narrow(b, loc, y2, elem), yf, i2);
    });
  });
}

/// Keeps element e iff tfc_k_uniform(seed, e) >= rate (probability
/// 1 - rate) and scales it by 1 / (1 - rate). The counter is the flat element
/// index, so the mask does not depend on how the work is split.
void emitDropout(OpBuilder &b, DropoutOp op, ValueRange operands,
                 Value output) {
  Location loc = op.getLoc();
  double rate = op.getRate().convertToDouble();
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  auto uniform = declareExternal(b, op, "tfc_k_uniform",
                                 b.getFunctionType({i64, i64}, {f32}));
  Value seed = loadScalar(b, loc, operands[1]);
  Value xf = flatten(b, loc, operands[0]), yf = flatten(b, loc, output);
  Type elem = elementTypeOf(output);
  Value rateF = floatConst(b, loc, f32, rate);
  // rate == 1 keeps nothing (u < 1 always); the infinite scale is never used.
  Value scale = floatConst(b, loc, f32, 1.0 / (1.0 - rate));
  Value zero = floatConst(b, loc, f32, 0.0);
  parallelRange(b, loc, numElements(shapeOf(output)),
           [&](OpBuilder &b, Location loc, Value e) {
             Value counter = b.create<arith::IndexCastOp>(loc, i64, e);
             Value u = b.create<func::CallOp>(loc, uniform,
                                              ValueRange{seed, counter})
                           .getResult(0);
             Value keep = b.create<arith::CmpFOp>(
                 loc, arith::CmpFPredicate::OGE, u, rateF);
             Value x = widen(b, loc, b.create<memref::LoadOp>(loc, xf, e));
             Value y = b.create<arith::SelectOp>(
                 loc, keep, b.create<arith::MulFOp>(loc, x, scale), zero);
             b.create<memref::StoreOp>(loc, narrow(b, loc, y, elem), yf, e);
           });
}

//===----------------------------------------------------------------------===//
// embedding
//===----------------------------------------------------------------------===//

/// Element r of a flat id buffer as i64, and whether it lies in [0, vocab).
std::pair<Value, Value> loadId(OpBuilder &b, Location loc, Value ids, Value r,
                               int64_t vocab) {
  Value id = toI64(b, loc, b.create<memref::LoadOp>(loc, ids, r));
  Value valid = b.create<arith::AndIOp>(
      loc,
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, id,
                              i64Const(b, loc, 0)),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, id,
                              i64Const(b, loc, vocab)));
  return {id, valid};
}

/// out[r, :] = table[ids[r], :]; an id outside [0, V) is reported and its row
/// is zero-filled (the output never holds stale arena bytes).
void emitEmbedding(OpBuilder &b, EmbeddingOp op, Value table, Value ids,
                   Value output) {
  Location loc = op.getLoc();
  int64_t vocab = shapeOf(table)[0], dim = shapeOf(table)[1];
  Value tf = flatten(b, loc, table), idf = flatten(b, loc, ids),
        of = flatten(b, loc, output);
  Type elem = elementTypeOf(output);
  Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(elem));
  parallelRange(
      b, loc, numElements(shapeOf(ids)),
      [&](OpBuilder &b, Location loc, Value r) {
        auto [id, valid] = loadId(b, loc, idf, r, vocab);
        Value outBase = b.create<arith::MulIOp>(loc, r, indexConst(b, loc, dim));
        b.create<scf::IfOp>(
            loc, valid,
            [&](OpBuilder &b, Location loc) {
              Value row = b.create<arith::IndexCastOp>(loc, b.getIndexType(), id);
              Value inBase =
                  b.create<arith::MulIOp>(loc, row, indexConst(b, loc, dim));
              forRange(b, loc, dim, [&](OpBuilder &b, Location loc, Value j) {
                Value v = b.create<memref::LoadOp>(
                    loc, tf, ValueRange{b.create<arith::AddIOp>(loc, inBase, j)});
                b.create<memref::StoreOp>(
                    loc, v, of,
                    ValueRange{b.create<arith::AddIOp>(loc, outBase, j)});
              });
              b.create<scf::YieldOp>(loc);
            },
            [&](OpBuilder &b, Location loc) {
              emitRuntimeError(b, loc, op, "embedding: id out of range");
              forRange(b, loc, dim, [&](OpBuilder &b, Location loc, Value j) {
                b.create<memref::StoreOp>(
                    loc, zero, of,
                    ValueRange{b.create<arith::AddIOp>(loc, outBase, j)});
              });
              b.create<scf::YieldOp>(loc);
            });
      });
}

/// out = init (or 0); out[ids[r], :] += grad[r, :] for every r in order, so
/// the sum is the same on every run. An id outside [0, V) is reported and
/// skipped. A 16-bit table's rows are summed in an f32 buffer and rounded
/// once at the end (summed in place they would round at every repeated id).
/// An f32 result planned over `init` (CpuTarget::mayWriteOverOperand) holds
/// init already: only the rows of ids are touched.
void emitEmbeddingGrad(OpBuilder &b, EmbeddingGradOp op, Value grad, Value ids,
                       Value init, Value output) {
  Location loc = op.getLoc();
  int64_t vocab = shapeOf(output)[0], dim = shapeOf(output)[1];
  Value gf = flatten(b, loc, grad), idf = flatten(b, loc, ids),
        out = flatten(b, loc, output);
  Type outElem = elementTypeOf(output);
  Type elem = computeType(outElem);
  Value of = out;
  if (elem != outElem)
    of = b.create<memref::AllocOp>(loc, MemRefType::get({vocab * dim}, elem));
  auto fill = [&](OpBuilder &b, Location loc) {
    Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(elem));
    Value initf = init ? flatten(b, loc, init) : Value();
    parallelRange(b, loc, vocab * dim, [&](OpBuilder &b, Location loc,
                                           Value i) {
      Value v = initf ? widen(b, loc, b.create<memref::LoadOp>(
                                          loc, initf, ValueRange{i}))
                      : zero;
      b.create<memref::StoreOp>(loc, v, of, ValueRange{i});
    });
  };
  if (init && of == out) {
    Value apart = b.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::ne,
        b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, init),
        b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, output));
    b.create<scf::IfOp>(loc, apart, [&](OpBuilder &b, Location loc) {
      fill(b, loc);
      b.create<scf::YieldOp>(loc);
    });
  } else {
    fill(b, loc);
  }
  forRange(b, loc, numElements(shapeOf(ids)),
           [&](OpBuilder &b, Location loc, Value r) {
             auto [id, valid] = loadId(b, loc, idf, r, vocab);
             Value inBase =
                 b.create<arith::MulIOp>(loc, r, indexConst(b, loc, dim));
             b.create<scf::IfOp>(
                 loc, valid,
                 [&](OpBuilder &b, Location loc) {
                   Value row = b.create<arith::IndexCastOp>(
                       loc, b.getIndexType(), id);
                   Value outBase = b.create<arith::MulIOp>(
                       loc, row, indexConst(b, loc, dim));
                   forRange(b, loc, dim, [&](OpBuilder &b, Location loc,
                                              Value j) {
                     Value o = b.create<arith::AddIOp>(loc, outBase, j);
                     Value acc = widen(b, loc, b.create<memref::LoadOp>(
                                                   loc, of, ValueRange{o}));
                     Value g = widen(
                         b, loc,
                         b.create<memref::LoadOp>(
                             loc, gf,
                             ValueRange{b.create<arith::AddIOp>(loc, inBase, j)}));
                     b.create<memref::StoreOp>(
                         loc,
                         narrow(b, loc, b.create<arith::AddFOp>(loc, acc, g),
                                elem),
                         of, ValueRange{o});
                   });
                   b.create<scf::YieldOp>(loc);
                 },
                 [&](OpBuilder &b, Location loc) {
                   emitRuntimeError(b, loc, op,
                                    "embedding_grad: id out of range");
                   b.create<scf::YieldOp>(loc);
                 });
           });
  if (of == out)
    return;
  parallelRange(b, loc, vocab * dim, [&](OpBuilder &b, Location loc, Value i) {
    Value sum = b.create<memref::LoadOp>(loc, of, ValueRange{i});
    b.create<memref::StoreOp>(loc, narrow(b, loc, sum, outElem), out,
                              ValueRange{i});
  });
  b.create<memref::DeallocOp>(loc, of);
}

} // namespace

/// Writes `update` into `dest` at the position in the 0-d buffer `position`
/// along `dim`, after a bounds check that reports a run-time error.
static void emitWindowWrite(OpBuilder &b, Location loc, Value update,
                            Value position, ValueRange positionIndex,
                            Value dest, int64_t dim, Operation *anchor) {
  ArrayRef<int64_t> shape = shapeOf(update);
  int64_t length = shape[dim], size = shapeOf(dest)[dim];
  // In i64, so that a huge position cannot wrap around the bounds check.
  Value pos = toI64(
      b, loc, b.create<memref::LoadOp>(loc, position, positionIndex));
  Value bad = b.create<arith::OrIOp>(
      loc,
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, pos,
                              i64Const(b, loc, 0)),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt, pos,
                              i64Const(b, loc, size - length)));
  b.create<scf::IfOp>(
      loc, bad,
      [&](OpBuilder &b, Location loc) {
        emitRuntimeError(b, loc, anchor,
                         "kv_cache_update: position out of range");
        b.create<scf::YieldOp>(loc);
      },
      [&](OpBuilder &b, Location loc) {
        Value offset = b.create<arith::IndexCastOp>(loc, b.getIndexType(), pos);
        copyElements(b, loc, update,
                     windowAlong(b, loc, dest, dim, offset, shape));
        b.create<scf::YieldOp>(loc);
      });
}

LogicalResult emitKvCacheWrite(OpBuilder &b, Location loc, Value update,
                               Value position, Value dest, int64_t dim) {
  ArrayRef<int64_t> shape = shapeOf(update);
  dim = normalizedDim(dim, shape.size());
  // The error call needs the module; loop bodies are built detached, so the
  // anchor is taken here.
  Operation *anchor = b.getInsertionBlock()->getParentOp();
  if (shapeOf(position).empty()) {
    emitWindowWrite(b, loc, update, position, {}, dest, dim, anchor);
    return success();
  }
  // One position per row (serving: sequences at their own positions): row r
  // of the update goes to row r of the cache at position[r].
  SmallVector<int64_t> rowShape(shape);
  rowShape[0] = 1;
  SmallVector<int64_t> destRowShape(shapeOf(dest));
  destRowShape[0] = 1;
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  Value rows = b.create<arith::ConstantIndexOp>(loc, shape[0]);
  b.create<scf::ForOp>(
      loc, zero, rows, one, ValueRange{},
      [&](OpBuilder &b, Location loc, Value row, ValueRange) {
        emitWindowWrite(b, loc, windowAlong(b, loc, update, 0, row, rowShape),
                        position, row,
                        windowAlong(b, loc, dest, 0, row, destRowShape), dim,
                        anchor);
        b.create<scf::YieldOp>(loc);
      });
  return success();
}

FailureOr<bool> emitDataMovementKernel(OpBuilder &b, Operation *op,
                                       ValueRange operands,
                                       ValueRange results) {
  Location loc = op->getLoc();
  return llvm::TypeSwitch<Operation *, FailureOr<bool>>(op)
      .Case([&](TransposeOp t) {
        emitTranspose(b, t, operands[0], results[0]);
        return true;
      })
      .Case([&](ConcatOp c) {
        emitConcat(b, c, operands, results[0]);
        return true;
      })
      .Case([&](SliceOp s) {
        emitSlice(b, s, operands[0], results[0]);
        return true;
      })
      .Case([&](DynamicSliceOp s) {
        emitDynamicSlice(b, s, operands[0], operands[1], results[0]);
        return true;
      })
      .Case([&](BroadcastToOp) {
        emitBroadcastTo(b, loc, operands[0], results[0]);
        return true;
      })
      .Case([&](IotaOp i) {
        emitIota(b, i, results[0]);
        return true;
      })
      .Case([&](RotaryOp r) {
        emitRotary(b, r, operands, results[0]);
        return true;
      })
      .Case([&](DropoutOp d) {
        emitDropout(b, d, operands, results[0]);
        return true;
      })
      .Case([&](EmbeddingOp e) {
        emitEmbedding(b, e, operands[0], operands[1], results[0]);
        return true;
      })
      .Case([&](EmbeddingGradOp e) {
        emitEmbeddingGrad(b, e, operands[0], operands[1],
                          operands.size() > 2 ? operands[2] : Value(),
                          results[0]);
        return true;
      })
      .Case([&](KvCacheUpdateOp kv) {
        // The planner normally calls emitKvCacheWrite directly (in place or
        // after its own copy); as a standalone kernel: copy, then write.
        b.create<memref::CopyOp>(loc, operands[0], results[0]);
        if (kv.getBlocks()) {
          emitPagedKvWrite(b, kv, operands[1], operands[2], operands[3],
                           results[0]);
          return true;
        }
        return succeeded(emitKvCacheWrite(b, loc, operands[1], operands[2],
                                          results[0],
                                          static_cast<int64_t>(kv.getDim())));
      })
      .Default([](Operation *) { return failure(); });
}

} // namespace tfc::cpu
