/* The CPU kernel library that every compiled artifact links statically.
 *
 * Generated code (codegen/cpu) lowers most tfc ops to loops through MLIR and LLVM, and
 * calls these hand-written kernels for the ops where a packed, register-blocked or
 * sorting algorithm matters: matrix products, attention, sampling and the grouped
 * products of mixture-of-experts. All pointers are
 * dense row-major buffers; all sizes are element counts. The functions are C so that the
 * generated LLVM IR calls them with plain pointers and integers.
 *
 * Threading: kernels split their work with the host's parallel_for (tfc_host_api_t),
 * set for the calling thread by tfc_kernels_set_host() at the start of every entry call.
 * Errors: a kernel that meets bad run-time data (an id out of range) calls
 * tfc_kernels_error(); the entry point checks tfc_kernels_take_error() after the call.
 */
#ifndef TFC_CODEGEN_CPU_KERNELS_TFC_KERNELS_H_
#define TFC_CODEGEN_CPU_KERNELS_TFC_KERNELS_H_

#include <stdint.h>

#include "tfc/artifact_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Per-thread context of the current entry call ---- */

/* Sets the host API used by kernels on this thread (NULL: run serially) and clears any
 * pending error. */
void tfc_kernels_set_host(const tfc_host_api_t* host);

/* Records a run-time error for the current call (the first one wins). */
void tfc_kernels_error(const char* message);

/* Returns the pending error message of this thread, or NULL, and clears it. The string
 * stays valid until the next call of tfc_kernels_set_host on this thread. */
const char* tfc_kernels_take_error(void);

/* Called by generated entry code around launch |kernel| (tfc-cpu-kernel-timers): forwards
 * to the host's kernel_begin / kernel_end when it has both, else returns at once. */
void tfc_kernels_kernel_begin(int32_t kernel);
void tfc_kernels_kernel_end(int32_t kernel);

/* Runs fn(ctx, begin, end) over a partition of [0, n) into ranges of at least |grain|, on
 * the host's threads (serially without a host, or inside another parallel region).
 * Generated loops call it (tfc-cpu-launch-parallel). */
void tfc_kernels_parallel_for(int64_t n, int64_t grain,
                              void (*fn)(void* ctx, int64_t begin, int64_t end), void* ctx);

/* ---- Collectives (tfc.all_reduce and its kin) ----
 * Forwards to the host's collective (tfc_host_api_t; kind TFC_COLLECTIVE_*, reduce TFC_REDUCE_*,
 * counts as written there), or records an error when the host has none. Blocking. */
void tfc_kernels_collective_f32(int32_t kind, int32_t reduce, const char* group, const float* send,
                                float* recv, int64_t count);
/* A gradient bucket: forwards to the host's collective_start / collective_wait (the counts and
 * the tag as written there), or records an error when the host has none. The start returns
 * once the host copied the buffers; the wait blocks until the result is in recv. */
void tfc_kernels_collective_start_f32(int32_t kind, int32_t reduce, const char* group,
                                      int64_t tag, int32_t num_buffers,
                                      const float* const* send, const int64_t* counts);
void tfc_kernels_collective_wait_f32(int64_t tag, int32_t num_buffers, float* const* recv,
                                     const int64_t* counts);

/* Point-to-point (tfc.send / tfc.recv): forwards to the host's p2p (kind TFC_P2P_*, as written
 * in artifact_abi.h), or records an error when the host has none. */
void tfc_kernels_p2p(int32_t kind, const char* group, int32_t peer, int64_t tag, void* data,
                     int64_t bytes);

/* ---- Device artifacts (tfc-cuda-launch-kernels) ----
 * A CUDA artifact's entries run on the host and call these with device addresses; they
 * forward to the host's device_launch, device_copy and device_constant (tfc_host_api_t),
 * or record an error when the host has none. */
void tfc_kernels_device_launch(int32_t kernel, const tfc_device_launch_t* launch,
                               void* const* args, int32_t num_args);
void tfc_kernels_device_copy(void* dst, const void* src, uint64_t bytes);
void* tfc_kernels_device_constant(const void* data, uint64_t bytes);
/* The host's device_matmul: 0 when the host queued the product, non-zero when it did not
 * take it (no device_matmul, or a product its library does not run): the caller then
 * launches its own kernel for it. */
int32_t tfc_kernels_device_matmul(const tfc_device_matmul_t* product, const void* a,
                                  const void* b, void* c, const void* bias);

/* ---- Matrix products ---- */

/* C[b] = op(A[b]) @ op(B[b]) (+ C[b] when accumulate != 0) for b in [0, batch), where
 * op(A) is M x K (A stored K x M when trans_a), op(B) is K x N (B stored N x K when
 * trans_b), and C is M x N. Consecutive batch matrices are stride_a / stride_b / stride_c
 * elements apart; a stride of 0 broadcasts one matrix over the batch. */
void tfc_k_matmul_f32(const float* a, const float* b, float* c, int64_t batch, int64_t m,
                      int64_t n, int64_t k, int32_t trans_a, int32_t trans_b,
                      int64_t stride_a, int64_t stride_b, int64_t stride_c,
                      int32_t accumulate);

/* y = x @ W + bias for x [M, K]; W [K, N] (or [N, K] when trans_w); bias [N] or NULL. */
void tfc_k_linear_f32(const float* x, const float* w, const float* bias, float* y,
                      int64_t m, int64_t n, int64_t k, int32_t trans_w);

/* y = act(x @ W + bias) + residual, with the epilogue applied to each output tile while
 * it is in cache (one write of y, no separate pass over it). x, w, bias, y, m, n, k and
 * trans_w as in tfc_k_linear_f32 (note the order m, n, k); residual [M, N] (laid out like
 * y) or NULL. y may be residual itself (in place: y += act(...)); it must not otherwise
 * overlap it. activation: 0 none, 1 gelu (tanh approximation, as PyTorch's
 * gelu(approximate='tanh')), 2 relu (NaN stays NaN), 3 silu (x * sigmoid(x)), 4 leaky relu
 * with slope act_param: x > 0 ? x : act_param * x (NaN stays NaN; tfc.leaky_relu's alpha);
 * other values report an error. act_param is read by activation 4 only (pass 0 else).
 * The activation is applied once per element after its whole sum over K, so results do
 * not depend on the thread count. With activation != 0 in place and M > 4, the residual
 * is copied once first (the partial sums over K blocks go to y). */
void tfc_k_linear_ex_f32(const float* x, const float* w, const float* bias,
                         const float* residual, float* y, int64_t m, int64_t n, int64_t k,
                         int32_t trans_w, int32_t activation, float act_param);

/* Element types of the B (weight) operand of the *_bx_f32 products below. */
enum { TFC_K_F32 = 0, TFC_K_BF16 = 1, TFC_K_F16 = 2 };

/* tfc_k_matmul_f32 and tfc_k_linear_ex_f32 with a B (weight) operand of element type
 * b_type / w_type (TFC_K_F32, TFC_K_BF16 or TFC_K_F16; stride_b counts its elements).
 * A 16-bit B is widened to f32 as it is read: in registers on the small-M (decode) paths,
 * while packing on the packed one. A product thus reads B's 16-bit bytes once (batch-1
 * decode, bound by the weights' bytes, runs about twice as fast as with f32 weights) and
 * sums in f32: the result is the f32 product of the widened values, with the f32 entry
 * points' summation order. Other element types report an error.
 * tfc_k_matmul_bx_f32 also takes period_b: when > 0, batch item b reads B's matrix
 * b % period_b (stride_b elements apart), a weight per head [H, K, N] broadcast over the
 * leading batch dims of [B, H, M, K] activations without copying it per item; 0: matrix
 * b, as tfc_k_matmul_f32. */
void tfc_k_matmul_bx_f32(const float* a, const void* b, int32_t b_type, float* c,
                         int64_t batch, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                         int32_t trans_b, int64_t stride_a, int64_t stride_b,
                         int64_t period_b, int64_t stride_c, int32_t accumulate);
void tfc_k_linear_ex_bx_f32(const float* x, const void* w, int32_t w_type, const float* bias,
                            const float* residual, float* y, int64_t m, int64_t n, int64_t k,
                            int32_t trans_w, int32_t activation, float act_param);

/* ---- Attention ---- */

/* out[b,h,i,:] = softmax_j(scale * q[b,h,i,:] . k[b,h/g,j,:] + mask) v[b,h/g,j,:] with
 * g = heads / kv_heads. q [B,H,Tq,D], k [B,Hkv,Tk,D], v [B,Hkv,Tk,Dv], out [B,H,Tq,Dv].
 * With causal != 0, key j is visible to query i iff j <= i + offset. Never forms the
 * Tq x Tk score matrix in memory (online softmax over key blocks). */
void tfc_k_attention_f32(const float* q, const float* k, const float* v, float* out,
                         int64_t batch, int64_t heads, int64_t kv_heads, int64_t tq,
                         int64_t tk, int64_t d, int64_t dv, int32_t causal, int64_t offset,
                         float scale);

/* tfc_k_attention_f32 with K and V of element type kv_type (TFC_K_F32, TFC_K_BF16 or
 * TFC_K_F16; a 16-bit KV cache): each block of keys and values is widened to f32 as it is
 * read, so decode reads the visible cache once at half the bytes; all sums in f32. The
 * result equals tfc_k_attention_f32's on the widened values, bit for bit. */
void tfc_k_attention_kvx_f32(const float* q, const void* k, const void* v, int32_t kv_type,
                             float* out, int64_t batch, int64_t heads, int64_t kv_heads,
                             int64_t tq, int64_t tk, int64_t d, int64_t dv, int32_t causal,
                             int64_t offset, float scale);

/* tfc_k_attention_kvx_f32 with one causal offset per row of the batch, row_offsets[b]
 * (serving: sequences at their own positions in one decode step). Row b's result equals
 * that of a call on row b alone with offset row_offsets[b], bit for bit. */
void tfc_k_attention_rows_f32(const float* q, const void* k, const void* v, int32_t kv_type,
                              float* out, int64_t batch, int64_t heads, int64_t kv_heads,
                              int64_t tq, int64_t tk, int64_t d, int64_t dv,
                              const int32_t* row_offsets, float scale);

/* Causal attention over a paged KV cache (serving): k and v are pools of pool_blocks blocks
 * [pool_blocks, kv_heads, block_size, d] (dv for v) of element type kv_type; blocks
 * [batch, max_blocks] is each row's block table and positions[b] the position of row b's
 * first query. Row b's key p lives in block blocks[b, p / block_size] at slot
 * p % block_size, and its query i sees keys p <= positions[b] + i. Row b's result equals
 * tfc_k_attention_kvx_f32's on that row with its visible keys laid out in order and offset
 * positions[b]. A row reads its table up to the first entry < 0: keys past it are not
 * seen (a row whose first entry is < 0 is idle: its result is 0). A block id >= pool_blocks
 * is an error (tfc_kernels_error). */
void tfc_k_attention_paged_f32(const float* q, const void* k, const void* v, int32_t kv_type,
                               float* out, int64_t batch, int64_t heads, int64_t kv_heads,
                               int64_t tq, int64_t d, int64_t dv, int64_t pool_blocks,
                               int64_t block_size, const int32_t* blocks,
                               int64_t max_blocks, const int32_t* positions, float scale);

/* Writes update [batch, kv_heads, len, d] (elements of elem_bytes bytes) into the paged
 * cache pool [pool_blocks, kv_heads, block_size, d]: row b's token l goes to logical
 * position p = positions[b] + l, block blocks[b, p / block_size], slot p % block_size.
 * Writes into a block < 0 are dropped (an idle row); a position outside
 * [0, max_blocks * block_size) or a block >= pool_blocks is an error (tfc_kernels_error). */
void tfc_k_paged_kv_write(void* pool, const void* update, int64_t elem_bytes, int64_t batch,
                          int64_t kv_heads, int64_t len, int64_t d, int64_t pool_blocks,
                          int64_t block_size, const int32_t* blocks, int64_t max_blocks,
                          const int32_t* positions);

/* The gradients of tfc_k_attention_f32: given its inputs, its output `out` and the
 * gradient `grad_out` (shaped like out), writes dq, dk, dv (shaped like q, k, v).
 * Probabilities are recomputed per query row; with grouped-query attention dk and dv
 * sum over the query heads that share a key/value head. */
void tfc_k_attention_grad_f32(const float* q, const float* k, const float* v,
                              const float* out, const float* grad_out, float* dq, float* dk,
                              float* dv, int64_t batch, int64_t heads, int64_t kv_heads,
                              int64_t tq, int64_t tk, int64_t d, int64_t dv_dim, int32_t causal,
                              int64_t offset, float scale);

/* ---- Sampling ---- */

/* For each row b of logits [B, V]: temperature <= 0 -> argmax (first on ties); else
 * softmax(logits / temperature) restricted to the top_k largest (top_k <= 0: all), then
 * to the smallest prefix (by descending probability) whose mass reaches top_p (>= 1: all),
 * renormalized, and one draw with a counter-based generator keyed by (seed, b). */
void tfc_k_sample_f32(const float* logits, int64_t batch, int64_t vocab, float temperature,
                      int32_t top_k, float top_p, int64_t seed, int32_t* out_ids);

/* ---- Mixture of experts ---- */

/* For each row t of logits [N, E]: ids[t, 0..k) = the k experts with the largest f32
 * softmax probability, the largest first, the lower index first on equal probabilities. */
void tfc_k_moe_route_f32(const float* logits, int64_t n, int64_t experts, int64_t k,
                         int32_t* ids);

/* Dropless SwiGLU experts: y[t] = sum_j weights[t, e] * w2_e (silu(w1_e x[t]) *
 * (w3_e x[t])) with e = ids[t, j]; x, y [N, D], ids [N, k], weights [N, E] with E =
 * total_experts; experts holds 3 num_experts pointers, those of experts first_expert ...
 * first_expert + num_experts - 1, per expert w1 [F, D], w3 [F, D], w2 [D, F]
 * (torch.nn.Linear layout). Tokens are grouped by expert and each expert runs on its rows
 * only; a (token, expert) pair of an expert not held here (expert parallelism) is skipped.
 * An id out of [0, E) reports an error. */
void tfc_k_moe_ffn_f32(const float* x, const int32_t* ids, const float* weights,
                       const float* const* experts, float* y, int64_t n, int64_t d, int64_t f,
                       int64_t num_experts, int64_t k, int64_t total_experts,
                       int64_t first_expert);

/* The gradients of tfc_k_moe_ffn_f32 given dy [N, D]: dx [N, D] (of the experts held here),
 * dweights [N, E] (zero outside each token's chosen experts held here) and dexperts (3
 * num_experts pointers shaped as experts). */
void tfc_k_moe_ffn_grad_f32(const float* x, const int32_t* ids, const float* weights,
                            const float* dy, const float* const* experts, float* dx,
                            float* dweights, float* const* dexperts, int64_t n, int64_t d,
                            int64_t f, int64_t num_experts, int64_t k, int64_t total_experts,
                            int64_t first_expert);

/* ---- Counter-based random numbers (dropout, sampling) ---- */

/* A uniform float in [0, 1) that depends only on (seed, counter): the same on any
 * thread count. Generated dropout code calls it per element. */
float tfc_k_uniform(int64_t seed, int64_t counter);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TFC_CODEGEN_CPU_KERNELS_TFC_KERNELS_H_ */
