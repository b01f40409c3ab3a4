//===- CostModel.cpp - FLOPs and bytes of tfc ops -------------------------===//
//
// FLOP counts follow the usual conventions: a multiply-add is 2 FLOPs, a
// comparison or add is 1, a transcendental (exp, tanh, erf) is counted as a
// handful of FLOPs since that is roughly what its polynomial costs. What
// matters for the passes is the order of magnitude: matmul-like ops are
// O(n^3)-ish, everything else is O(elements).
//
//===----------------------------------------------------------------------===//
#include "passes/CostModel.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace tfc {
namespace {

int64_t elements(Type type) {
  if (auto shaped = llvm::dyn_cast<ShapedType>(type))
    if (shaped.hasStaticShape())
      return shaped.getNumElements();
  return 0;
}

int64_t elements(Value v) { return elements(v.getType()); }

/// FLOPs per element of the pointwise ops.
constexpr int64_t kTranscendental = 8;

/// 2 * M * N * K * batch for a product whose result is `result` and whose
/// contraction has length `k`.
int64_t productFlops(Value result, int64_t k) { return 2 * elements(result) * k; }

int64_t attentionFlops(Value query, Value value, Value key, bool causal) {
  auto q = llvm::cast<ShapedType>(query.getType()).getShape();
  auto k = llvm::cast<ShapedType>(key.getType()).getShape();
  auto v = llvm::cast<ShapedType>(value.getType()).getShape();
  int64_t bh = q[0] * q[1], tq = q[2], d = q[3], tk = k[2], dv = v[3];
  // Q K^T and P V, plus softmax (~5 FLOPs per score).
  int64_t scores = bh * tq * tk;
  if (causal && tq == tk)
    scores = bh * tq * (tk + 1) / 2; // only the lower triangle is computed
  return scores * (2 * d + 2 * dv + 5);
}

} // namespace

int64_t tensorBytes(Type type) {
  auto shaped = llvm::dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  int64_t bits = shaped.getElementTypeBitWidth();
  return shaped.getNumElements() * std::max<int64_t>(1, (bits + 7) / 8);
}

bool isFreeOp(Operation *op) {
  // copy_to_group: a view in the forward (its all-reduce is in the gradient).
  return llvm::isa<LoadOp, StoreOp, ConstantOp, ReshapeOp, CopyToGroupOp,
                   ParamOp, StateOp>(op);
}

bool isComputeBound(Operation *op) {
  if (auto fused = llvm::dyn_cast<FusedOp>(op)) {
    bool any = false;
    fused.getBody().walk([&](Operation *inner) {
      any |= isComputeBound(inner);
    });
    return any;
  }
  return llvm::isa<MatmulOp, LinearOp, AttentionOp, AttentionGradOp,
                   PagedAttentionOp, MoeFfnOp, MoeFfnGradOp>(op);
}

/// The three products of the SwiGLU experts over the N * k (token, expert)
/// pairs that routing made: 2 * 3 * D * F FLOPs each, plus the gate's silu
/// and the weighted sum. Independent of the number of experts E.
int64_t moeExpertFlops(Value x, ValueRange experts, int64_t topK) {
  auto xs = llvm::cast<ShapedType>(x.getType()).getShape();
  int64_t pairs = xs[0] * topK, D = xs[1];
  int64_t F = llvm::cast<ShapedType>(experts[0].getType()).getShape()[0];
  return pairs * (6 * D * F + (kTranscendental + 2) * F + 2 * D);
}

int64_t estimateFlops(Operation *op) {
  if (isFreeOp(op))
    return 0;
  int64_t out = op->getNumResults() ? elements(op->getResult(0)) : 0;
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case([&](FusedOp fused) {
        int64_t sum = 0;
        for (Operation &inner : fused.getBody().front().without_terminator())
          sum += estimateFlops(&inner);
        return sum;
      })
      .Case([&](MatmulOp m) {
        auto lhs = llvm::cast<ShapedType>(m.getLhs().getType()).getShape();
        int64_t k = m.getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
        return productFlops(m.getResult(), k);
      })
      .Case([&](LinearOp l) {
        int64_t k = llvm::cast<ShapedType>(l.getX().getType()).getShape().back();
        return productFlops(l.getResult(), k) + (l.getBias() ? out : 0);
      })
      .Case([&](AttentionOp a) {
        return attentionFlops(a.getQuery(), a.getValue(), a.getKey(),
                              a.getCausal());
      })
      .Case([&](PagedAttentionOp a) {
        // At most every row at the end of its block table: M * S keys each.
        auto q = a.getQuery().getType().getShape();
        int64_t keys = a.getBlocks().getType().getDimSize(1) *
                       a.getKeyPool().getType().getDimSize(2);
        return q[0] * q[1] * q[2] * keys *
               (2 * q[3] + 2 * a.getValuePool().getType().getDimSize(3) + 5);
      })
      .Case([&](AttentionGradOp a) {
        // Recomputes the scores and probabilities, then dV, dP, dQ, dK: five
        // products where the forward has two.
        return attentionFlops(a.getQuery(), a.getValue(), a.getKey(),
                              a.getCausal()) *
               5 / 2;
      })
      .Case([&](MoeRouteOp r) {
        // Softmax over the E logits, then k passes to pick the largest.
        return (4 + kTranscendental + r.getTopK()) * elements(r.getLogits());
      })
      .Case([&](MoeFfnOp m) {
        return moeExpertFlops(m.getX(), m.getExperts(),
                              m.getIds().getType().getDimSize(1));
      })
      .Case([&](MoeFfnGradOp m) {
        // Recomputes the three forward products (the down product's output
        // gives the weights' gradient), then two per matrix backward.
        return 3 * moeExpertFlops(m.getX(), m.getExperts(),
                                  m.getIds().getType().getDimSize(1));
      })
      .Case<ExpOp, LogOp, TanhOp, SinOp, CosOp, SigmoidOp, SiluOp, PowOp,
            GeluOp>([&](Operation *) { return kTranscendental * out; })
      .Case<LayerNormOp, RmsNormOp>([&](Operation *) { return 8 * out; })
      .Case<SoftmaxOp, LogSoftmaxOp>(
          [&](Operation *) { return (4 + kTranscendental) * out; })
      .Case<CrossEntropyOp, CrossEntropyGradOp>([&](Operation *o) {
        return (4 + kTranscendental) * elements(o->getOperand(0));
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ArgmaxOp>(
          [&](Operation *o) { return elements(o->getOperand(0)); })
      .Case([&](EmbeddingGradOp g) { return elements(g.getGrad()); })
      .Case([&](RotaryOp) { return 4 * out; })
      .Case([&](SampleOp s) {
        return (4 + kTranscendental) * elements(s.getLogits());
      })
      .Case<DropoutOp>([&](Operation *) { return 12 * out; })
      // Pure data movement.
      .Case<EmbeddingOp, TransposeOp, ConcatOp, SliceOp, DynamicSliceOp,
            BroadcastToOp, KvCacheUpdateOp, IotaOp, SendOp, RecvOp>(
          [&](Operation *) { return int64_t(0); })
      // Every other op is pointwise: one FLOP per element.
      .Default([&](Operation *) { return out; });
}

OpCost estimateCost(Operation *op) {
  OpCost cost;
  if (isFreeOp(op))
    return cost;
  cost.flops = estimateFlops(op);
  for (Value r : op->getResults())
    cost.bytesWritten += tensorBytes(r.getType());
  for (Value v : op->getOperands())
    cost.bytesRead += tensorBytes(v.getType());
  if (auto ar = llvm::dyn_cast<AllReduceOp>(op)) {
    // Ring all-reduce (what MPI and NCCL use for large tensors): a
    // reduce-scatter then an all-gather, each sending (n-1)/n of the tensor.
    int64_t n = ar.getSize();
    cost.linkBytes = 2 * (n - 1) * tensorBytes(ar.getX().getType()) / n;
  } else if (auto rs = llvm::dyn_cast<ReduceScatterOp>(op)) {
    // Each half of the ring alone: (n-1)/n of the whole (unscattered) tensor.
    int64_t n = rs.getSize();
    cost.linkBytes = (n - 1) * tensorBytes(rs.getX().getType()) / n;
  } else if (auto ag = llvm::dyn_cast<AllGatherOp>(op)) {
    int64_t n = ag.getSize();
    cost.linkBytes = (n - 1) * tensorBytes(ag.getResult().getType()) / n;
  } else if (auto a2a = llvm::dyn_cast<AllToAllOp>(op)) {
    // Each rank keeps its own block and sends the other n-1.
    int64_t n = a2a.getSize();
    cost.linkBytes = (n - 1) * tensorBytes(a2a.getX().getType()) / n;
  }
  if (auto send = llvm::dyn_cast<SendOp>(op))
    cost.linkBytes = tensorBytes(send.getX().getType()); // a receive sends nothing
  if (auto start = llvm::dyn_cast<AllReduceStartOp>(op)) {
    // One ring all-reduce of the bucket's concatenation (as above); its
    // wait moves nothing over the link.
    int64_t n = start.getSize(), bytes = 0;
    for (Value x : start.getXs())
      bytes += tensorBytes(x.getType());
    cost.linkBytes = 2 * (n - 1) * bytes / n;
  }
  // Ops that touch only part of an operand.
  if (auto e = llvm::dyn_cast<EmbeddingOp>(op)) {
    cost.bytesRead = tensorBytes(e.getIds().getType()) + cost.bytesWritten;
  } else if (auto s = llvm::dyn_cast<DynamicSliceOp>(op)) {
    cost.bytesRead = cost.bytesWritten + 4;
  } else if (auto s = llvm::dyn_cast<SliceOp>(op)) {
    cost.bytesRead = cost.bytesWritten;
  } else if (llvm::isa<MoeFfnOp, MoeFfnGradOp>(op)) {
    // Only the experts some token chose are read: at most N * k of the E.
    auto ids = llvm::cast<ShapedType>(op->getOperand(1).getType());
    unsigned leading = llvm::isa<MoeFfnOp>(op) ? 3 : 4; // x, ids, weights (, grad)
    unsigned numExperts = op->getNumOperands() - leading;
    int64_t E = numExperts / 3;
    int64_t used = std::min<int64_t>(E, ids.getNumElements());
    int64_t expertBytes = 0;
    for (Value v : op->getOperands().take_back(numExperts))
      expertBytes += tensorBytes(v.getType());
    cost.bytesRead -= expertBytes - expertBytes / E * used;
  } else if (auto pa = llvm::dyn_cast<PagedAttentionOp>(op)) {
    // Each row reads at most its table's blocks of the pools, not the pools.
    auto pool = pa.getKeyPool().getType();
    int64_t perBlock =
        (tensorBytes(pool) + tensorBytes(pa.getValuePool().getType())) /
        pool.getDimSize(0);
    auto table = pa.getBlocks().getType();
    cost.bytesRead = tensorBytes(pa.getQuery().getType()) +
                     tensorBytes(table) + 4 * table.getDimSize(0) +
                     table.getNumElements() * perBlock;
  } else if (auto kv = llvm::dyn_cast<KvCacheUpdateOp>(op)) {
    // Written in place into the cache: only the new rows move.
    cost.bytesRead = tensorBytes(kv.getUpdate().getType()) + 4;
    cost.bytesWritten = tensorBytes(kv.getUpdate().getType());
  }
  return cost;
}

} // namespace tfc
