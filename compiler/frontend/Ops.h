//===- Ops.h - the tracing frontend: one function per tfc op ----*- C++ -*-===//
//
// Each function records one tfc op (see dialects/tfc/TfcOps.td for the exact
// semantics) and returns its result. Shapes are checked by the op's own rules
// before anything is built; a mismatch throws TraceError. Dimensions may be
// negative (counted from the end) wherever the op allows it.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_COMPILER_FRONTEND_OPS_H
#define TFC_COMPILER_FRONTEND_OPS_H

#include "compiler/frontend/Graph.h"

#include <optional>

namespace tfc::frontend {

//===- Constants and indices ----------------------------------------------===//

/// A constant of `shape` from row-major `values` (floats or ints by dtype).
Tensor constant(Graph &g, llvm::ArrayRef<int64_t> shape, DType dtype,
                llvm::ArrayRef<double> values);
/// A 0-d constant.
Tensor scalar(Graph &g, double value, DType dtype);
/// A 0-d constant with the element type of `like`.
Tensor scalarLike(Tensor like, double value);
/// 0, 1, 2, ... along `dim` of `shape`.
Tensor iota(Graph &g, llvm::ArrayRef<int64_t> shape, DType dtype,
            int64_t dim = 0);

//===- Elementwise ----------------------------------------------------------===//

Tensor add(Tensor a, Tensor b);
Tensor sub(Tensor a, Tensor b);
Tensor mul(Tensor a, Tensor b);
Tensor div(Tensor a, Tensor b);
Tensor maximum(Tensor a, Tensor b);
Tensor minimum(Tensor a, Tensor b);
Tensor pow(Tensor a, Tensor b);
Tensor neg(Tensor x);
Tensor exp(Tensor x);
Tensor log(Tensor x);
Tensor sqrt(Tensor x);
Tensor rsqrt(Tensor x);
Tensor tanh(Tensor x);
Tensor sin(Tensor x);
Tensor cos(Tensor x);
Tensor sigmoid(Tensor x);
Tensor abs(Tensor x);
Tensor relu(Tensor x);
Tensor silu(Tensor x);
/// GPT-2 uses the tanh approximation.
enum class GeluApprox { None, Tanh };
Tensor gelu(Tensor x, GeluApprox approximate);
Tensor leakyRelu(Tensor x, float alpha);
Tensor cast(Tensor x, DType dtype);
/// `seed` is a 0-d i64.
Tensor dropout(Tensor x, Tensor seed, float rate);

//===- Linear algebra -------------------------------------------------------===//

struct MatmulOptions {
  bool transposeLhs = false;
  bool transposeRhs = false;
};
/// [..., M, K] @ [..., K, N] -> [..., M, N], batch dimensions broadcast.
Tensor matmul(Tensor lhs, Tensor rhs, MatmulOptions options = {});
/// x [..., K] @ weight [K, N] (+ bias [N]); with `transposeWeight`, weight is
/// [N, K] (torch.nn.Linear).
Tensor linear(Tensor x, Tensor weight, std::optional<Tensor> bias = {},
              bool transposeWeight = false);

//===- Normalization, softmax, attention -------------------------------------===//

Tensor layerNorm(Tensor x, std::optional<Tensor> weight,
                 std::optional<Tensor> bias, float eps);
Tensor rmsNorm(Tensor x, std::optional<Tensor> weight, float eps);
Tensor softmax(Tensor x, int64_t dim = -1);
Tensor logSoftmax(Tensor x, int64_t dim = -1);

struct AttentionOptions {
  bool causal = false;
  /// 0-d i32: the position of the first query (KV caches); causal only.
  std::optional<Tensor> offset;
  /// Defaults to 1 / sqrt(head dim).
  std::optional<float> scale;
};
/// query [B, H, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv] ->
/// [B, H, Tq, Dv]; Hkv divides H (grouped-query attention).
Tensor attention(Tensor query, Tensor key, Tensor value,
                 const AttentionOptions &options = {});
/// Rotary embedding (rotate-half) of x [B, H, T, D] at positions offset + t,
/// with frequencies theta^(-2i/D) or, when given, `frequencies` ([D/2] f32).
Tensor rotary(Tensor x, float theta, std::optional<Tensor> offset = {},
              std::optional<Tensor> frequencies = {});
/// table [V, D] gathered by integer ids -> ids.shape + [D].
Tensor embedding(Tensor table, Tensor ids);

//===- Shapes ------------------------------------------------------------------===//

Tensor reshape(Tensor x, llvm::ArrayRef<int64_t> shape);
Tensor transpose(Tensor x, llvm::ArrayRef<int64_t> perm);
Tensor concat(llvm::ArrayRef<Tensor> inputs, int64_t dim);
/// Static window; `stride` defaults to all ones.
Tensor slice(Tensor x, llvm::ArrayRef<int64_t> start,
             llvm::ArrayRef<int64_t> limit,
             llvm::ArrayRef<int64_t> stride = {});
/// `length` elements along `dim` from the run-time index `start` (0-d i32).
Tensor dynamicSlice(Tensor x, Tensor start, int64_t dim, int64_t length);
Tensor broadcastTo(Tensor x, llvm::ArrayRef<int64_t> shape);

//===- Reductions ----------------------------------------------------------------===//

Tensor reduceSum(Tensor x, llvm::ArrayRef<int64_t> dims, bool keepdim = false);
Tensor reduceMean(Tensor x, llvm::ArrayRef<int64_t> dims, bool keepdim = false);
Tensor reduceMax(Tensor x, llvm::ArrayRef<int64_t> dims, bool keepdim = false);
/// i32 indices; the dimension is removed.
Tensor argmax(Tensor x, int64_t dim = -1);

//===- Losses, sampling, caches ----------------------------------------------------===//

/// logits [..., V], targets [...] -> 0-d f32 mean over counted targets.
Tensor crossEntropy(Tensor logits, Tensor targets, int64_t ignoreIndex = -100);
/// logits [B, V] -> ids [B] i32; the knobs are 0-d run-time tensors.
Tensor sample(Tensor logits, Tensor temperature, Tensor topK, Tensor topP,
              Tensor seed);
/// `cache` with positions [position, position + L) along `dim` replaced by
/// `update`.
Tensor kvCacheUpdate(Tensor cache, Tensor update, Tensor position, int64_t dim);
/// A paged KV cache (tfc.kv_cache_update with blocks): `update` [B, Hkv, L, D]
/// written into the pool [NB, Hkv, S, D] at row b's logical positions
/// positions[b] + l through its block table `blocks` [B, M].
Tensor pagedKvWrite(Tensor pool, Tensor update, Tensor blocks,
                    Tensor positions);
/// Causal attention of query [B, H, Tq, D] over the paged pools, row b's
/// first query at positions[b] (tfc.paged_attention).
Tensor pagedAttention(Tensor query, Tensor keyPool, Tensor valuePool,
                      Tensor blocks, Tensor positions);

//===- Mixture of experts ----------------------------------------------------------===//

/// Router logits [N, E] -> the top-k experts of each token [N, k] i32.
Tensor moeRoute(Tensor logits, int64_t topK);
/// Dropless SwiGLU experts: x [N, D], ids [N, k], weights [N, E] and per
/// expert (w1 [F, D], w3 [F, D], w2 [D, F]) -> [N, D] (tfc.moe_ffn).
Tensor moeFfn(Tensor x, Tensor ids, Tensor weights,
              llvm::ArrayRef<Tensor> experts);

} // namespace tfc::frontend

#endif // TFC_COMPILER_FRONTEND_OPS_H
