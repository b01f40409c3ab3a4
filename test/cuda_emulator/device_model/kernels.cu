// Kernels that exercise the host device model (../host_shim.h) and the kernel library's
// cooperative pieces (codegen/cuda/kernels): check_device_model.py runs them on the host
// against NumPy, and compiles this same file with nvcc for the GPUs (ptxas: no spills).
// The *_bad kernels are wrong on purpose; the model must report each with its name.
#include "prelude.cuh"

// A block's sum: a tree in shared memory, one barrier a level.
extern "C" __global__ void block_sum(const float* x, float* out) {
  TFC_SHARED(float, partial, 256);
  const unsigned i = threadIdx.x;
  partial[i] = x[blockIdx.x * 256 + i];
  __syncthreads();
  for (unsigned half = 128; half > 0; half >>= 1) {
    if (i < half) partial[i] = partial[i] + partial[i + half];
    __syncthreads();
  }
  if (i == 0) out[blockIdx.x] = partial[0];
}

// The same, missing the barrier inside the tree: a race on `partial`.
extern "C" __global__ void block_sum_bad_race(const float* x, float* out) {
  TFC_SHARED(float, partial, 256);
  const unsigned i = threadIdx.x;
  partial[i] = x[blockIdx.x * 256 + i];
  __syncthreads();
  for (unsigned half = 128; half > 0; half >>= 1) {
    if (i < half) partial[i] = partial[i] + partial[i + half];
  }
  if (i == 0) out[blockIdx.x] = partial[0];
}

extern "C" __global__ void shared_bad_bounds(const float* x, float* out) {
  TFC_SHARED(float, row, 64);
  row[threadIdx.x] = x[threadIdx.x];  // launched with 65 threads
  __syncthreads();
  out[threadIdx.x] = row[threadIdx.x];
}

extern "C" __global__ void shared_bad_uninitialized(const float* x, float* out) {
  TFC_SHARED(float, row, 64);
  if (threadIdx.x != 5) row[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = row[63 - threadIdx.x];
}

extern "C" __global__ void barrier_bad_divergent(const float* x, float* out) {
  if (threadIdx.x >= 16) return;
  __syncthreads();
  out[threadIdx.x] = x[threadIdx.x];
}

extern "C" __global__ void collective_bad_divergent(const float* x, float* out) {
  const float v = x[threadIdx.x];
  if (threadIdx.x < 16)
    out[threadIdx.x] = __shfl_sync(0xffffffffu, v, 0);
  else
    out[threadIdx.x] = (float)__ballot_sync(0xffffffffu, v > 0.0f);
}

// Lane 0 writes, lane 1 reads, no __syncwarp between: a race within a warp.
extern "C" __global__ void warp_bad_race(const float* x, float* out) {
  TFC_SHARED(float, cell, 1);
  if (threadIdx.x == 0) cell[0] = x[0];
  if (threadIdx.x == 1) out[0] = cell[0];
}

// The same with the __syncwarp: correct.
extern "C" __global__ void warp_sync(const float* x, float* out) {
  TFC_SHARED(float, cell, 1);
  if (threadIdx.x == 0) cell[0] = x[0];
  __syncwarp();
  if (threadIdx.x == 1) out[0] = cell[0];
}

// Warp collectives over a 3-D block (8, 4, 2): per warp its sum and max (xor butterfly), a
// shfl_down sum into lane 0, an inclusive shfl_up scan, a ballot of x > 0 and any/all.
// out holds 6 floats per thread, in linear thread order.
extern "C" __global__ void warp_collectives(const float* x, float* out) {
  const unsigned linear = threadIdx.x + threadIdx.y * blockDim.x +
                          threadIdx.z * blockDim.x * blockDim.y;
  const unsigned lane = linear % 32;
  const float v = x[blockIdx.x * 64 + linear];
  float down = v;
  for (int offset = 16; offset > 0; offset >>= 1) down += __shfl_down_sync(0xffffffffu, down, offset);
  float scan = v;
  for (int offset = 1; offset < 32; offset <<= 1) {
    const float up = __shfl_up_sync(0xffffffffu, scan, offset);
    if ((int)lane >= offset) scan += up;
  }
  const unsigned ballot = __ballot_sync(0xffffffffu, v > 0.0f);
  float* o = out + (blockIdx.x * 64 + linear) * 6;
  o[0] = tfc_warp_sum(v);
  o[1] = tfc_warp_max(v);
  o[2] = __shfl_sync(0xffffffffu, down, 0);
  o[3] = scan;
  o[4] = (float)__popc(ballot);
  o[5] = (float)(__any_sync(0xffffffffu, v > 2.0f) * 2 + __all_sync(0xffffffffu, v > -2.0f));
}

// Dynamic shared memory: each block reverses its slice of x.
extern "C" __global__ void dynamic_reverse(const float* x, float* out) {
  auto slice = tfc_dynamic_shared<float>();  // a float*; a checked pointer on the host
  const unsigned n = blockDim.x;
  slice[threadIdx.x] = x[blockIdx.x * n + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * n + threadIdx.x] = slice[n - 1 - threadIdx.x];
}

// The tensor-core GEMM, C = A B into f32 C (row-major, ldc = N), batched over blockIdx.z.
template <bool kBf16, bool kTransA, bool kTransB>
__device__ __forceinline__ void gemm_case(const unsigned short* a, const unsigned short* b, float* c,
                                          long long M, long long N, long long K) {
  const long long z = blockIdx.z;
  const long long lda = kTransA ? M : K, ldb = kTransB ? K : N;
  a += z * M * K;
  b += z * K * N;
  c += z * M * N;
  tfc_gemm_tc_64x64<kBf16, kTransA, kTransB>(
      a, b, M, N, K, lda, ldb, [&](long long m, long long n, float v) { c[m * N + n] = v; });
}
#define TFC_GEMM_CASE(NAME, BF16, TA, TB)                                                \
  extern "C" __global__ void NAME(const unsigned short* a, const unsigned short* b,    \
                                  float* c, long long M, long long N, long long K) {   \
    gemm_case<BF16, TA, TB>(a, b, c, M, N, K);                                         \
  }
TFC_GEMM_CASE(gemm_bf16_nn, true, false, false)
TFC_GEMM_CASE(gemm_bf16_tn, true, true, false)
TFC_GEMM_CASE(gemm_bf16_nt, true, false, true)
TFC_GEMM_CASE(gemm_f16_nn, false, false, false)
TFC_GEMM_CASE(gemm_f16_tt, false, true, true)

// The exact f32 tile on the CUDA cores, for ptxas's report; its numerics are checked through
// the emitter by check_cuda_kernels.py (the f32 "tiled" and other matmul/linear cases).
extern "C" __global__ void gemm_simt_f32_nt(const float* a, const float* b, float* c) {
  tfc_gemm_simt_64x64<false, true>(a, b, 4096LL, 768LL, 768LL, 768LL, 768LL,
                                   [&](long long m, long long n, float v) { c[m * 768LL + n] = v; });
}
extern "C" __global__ void gemm_simt_f32_tn(const float* a, const float* b, float* c) {
  tfc_gemm_simt_64x64<true, false>(a, b, 768LL, 3072LL, 4096LL, 768LL, 3072LL,
                                   [&](long long m, long long n, float v) { c[m * 3072LL + n] = v; });
}
// The same on tensor cores through TF32 (tfc --cuda-tf32).
extern "C" __global__ void gemm_tf32_nt(const float* a, const float* b, float* c) {
  tfc_gemm_tf32_64x64<false, true>(a, b, 4096LL, 768LL, 768LL, 768LL, 768LL,
                                   [&](long long m, long long n, float v) { c[m * 768LL + n] = v; });
}
extern "C" __global__ void gemm_tf32_tn(const float* a, const float* b, float* c) {
  tfc_gemm_tf32_64x64<true, false>(a, b, 768LL, 3072LL, 4096LL, 768LL, 3072LL,
                                   [&](long long m, long long n, float v) { c[m * 3072LL + n] = v; });
}
// The decode GEMV (one token, GPT-2's and LLaMA's weight layouts), for ptxas's report;
// numerics: check_cuda_kernels.py's "GEMV" cases and the small products.
extern "C" __global__ void gemv_bf16_rows1(const unsigned short* a, const unsigned short* b,
                                           float* c) {
  tfc_gemv<1, false>(a, b, 2304LL, 768LL, 768LL, 2304LL,
                     [&](long long m, long long n, float v) { c[m * 2304LL + n] = v; });
}
extern "C" __global__ void gemv_f32_rows8_trans(const float* a, const float* b, float* c) {
  tfc_gemv<8, true>(a, b, 4096LL, 4096LL, 4096LL, 4096LL,
                    [&](long long m, long long n, float v) { c[m * 4096LL + n] = v; });
}

// The row kernels (kernels/row.cuh), for ptxas's report; their numerics are checked through
// the emitter by test/e2e/cuda/check_cuda_kernels.py (softmax, layer_norm, rms_norm cases).
extern "C" __global__ void softmax_rows_bf16(const unsigned short* x, unsigned short* y) {
  tfc_softmax_rows<false>(x, y, 1000LL, 768LL);
}
extern "C" __global__ void log_softmax_rows_f32(const float* x, float* y) {
  tfc_softmax_rows<true>(x, y, 1000LL, 50257LL);
}
extern "C" __global__ void layer_norm_rows_bf16(const unsigned short* x, const float* w,
                                                const float* b, unsigned short* y) {
  tfc_norm_rows<true>(x, y, w, b, 1000LL, 768LL, 1e-5f);
}
extern "C" __global__ void cross_entropy_rows_f32(const float* x, const int* t, float* loss,
                                                  float* partials, unsigned* done) {
  tfc_cross_entropy_rows(x, t, loss, 8192LL, 50257LL, -100LL, partials, done);
}
extern "C" __global__ void cross_entropy_grad_rows_bf16(const unsigned short* x, const int* t,
                                                        const float* dloss, unsigned short* dx) {
  tfc_cross_entropy_grad_rows(x, t, dloss, dx, 8192LL, 50257LL, -100LL);
}

// Reductions (kernels/reduce.cuh), for ptxas's report; numerics: check_cuda_kernels.py's
// reduce cases.
extern "C" __global__ void reduce_rows_max_bf16(const unsigned short* x, float* y) {
  tfc_reduce_rows<kTfcReduceMax>(x, y, 8192LL, 768LL);
}
extern "C" __global__ void reduce_columns_sum_f32(const float* x, float* y) {
  tfc_reduce_columns<kTfcReduceSum>(x, y, 8192LL, 768LL);
}

// Flash attention forward (kernels/attention.cuh) at the head dims of GPT-2 and LLaMA, for
// ptxas's report; its numerics are checked through the emitter by check_cuda_kernels.py
// (the "attention flash" cases).
extern "C" __global__ void flash_attention_bf16_d64(const unsigned short* q,
                                                    const unsigned short* k,
                                                    const unsigned short* v, unsigned short* o) {
  tfc_flash_attention_fwd<true, 64, 64, true>(q, k, v, o, 12LL, 12LL, 1024LL, 1024LL, 0LL,
                                              0.125f);
}
extern "C" __global__ void flash_attention_f16_d128(const unsigned short* q,
                                                    const unsigned short* k,
                                                    const unsigned short* v, tfc_f16* o) {
  tfc_flash_attention_fwd<false, 128, 128, true>(q, k, v, o, 32LL, 8LL, 2048LL, 2048LL, 0LL,
                                                 0.08838834764f);
}
// Decode attention (flash-decoding) at GPT-2's head dim, f32, and LLaMA's, bf16.
__device__ float decode_partial[12 * 8 * 66];
__device__ unsigned decode_tickets[12];
extern "C" __global__ void attention_decode_f32_d64(const float* q, const float* k,
                                                    const float* v, float* o) {
  tfc_attention_decode<64, 64, true>(q, k, v, o, 12LL, 12LL, 1LL, 1024LL, 1023LL, 0.125f,
                                     decode_partial, decode_tickets);
}
extern "C" __global__ void attention_decode_bf16_d128(const unsigned short* q,
                                                      const unsigned short* k,
                                                      const unsigned short* v,
                                                      unsigned short* o) {
  tfc_attention_decode<128, 128, true>(q, k, v, o, 32LL, 8LL, 1LL, 2048LL, 2047LL,
                                       0.08838834764f, decode_partial, decode_tickets);
}
// The same over a paged KV cache (pools of 1024 blocks of 16 positions, tables of 128).
extern "C" __global__ void attention_decode_paged_bf16_d128(const unsigned short* q,
                                                            const unsigned short* k,
                                                            const unsigned short* v,
                                                            unsigned short* o, const int* table,
                                                            const int* positions) {
  tfc_attention_decode<128, 128, true>(q, k, v, o, 32LL, 8LL, 1LL, 2048LL, 0LL,
                                       0.08838834764f, decode_partial, decode_tickets,
                                       positions, tfc_kv_pages{table, 16LL, 128LL, 1024LL});
}
__device__ float flash_bwd_lse[8 * 12 * 1024], flash_bwd_delta[8 * 12 * 1024];
__device__ unsigned flash_bwd_counters[3];
// The backward on the CUDA cores, f32 at GPT-2's head dim (two chunks of 32 columns).
extern "C" __global__ void attention_bwd_simt_f32_d64(const float* q, const float* k,
                                                      const float* v, const float* o,
                                                      const float* dout, float* dq, float* dk,
                                                      float* dv) {
  tfc_attention_bwd_simt<64, 64, true>(q, k, v, o, dout, dq, dk, dv, 8LL, 12LL, 12LL, 1024LL,
                                       1024LL, 0LL, 0.125f, flash_bwd_lse, flash_bwd_delta,
                                       flash_bwd_counters);
}
// Flash attention backward: GPT-2's head dim (64-row tiles) and LLaMA's (32-row tiles), the gradients
// in f32 and in the operand type.
extern "C" __global__ void flash_attention_bwd_bf16_d64(
    const unsigned short* q, const unsigned short* k, const unsigned short* v,
    const unsigned short* o, const unsigned short* dout, float* dq, float* dk, float* dv) {
  tfc_flash_attention_bwd<true, 64, 64, true>(q, k, v, o, dout, dq, dk, dv, 8LL, 12LL, 12LL,
                                              1024LL, 1024LL, 0LL, 0.125f, flash_bwd_lse,
                                              flash_bwd_delta, flash_bwd_counters);
}
extern "C" __global__ void flash_attention_bwd_f16_d128(
    const unsigned short* q, const unsigned short* k, const unsigned short* v,
    const unsigned short* o, const unsigned short* dout, tfc_f16* dq, tfc_f16* dk,
    tfc_f16* dv) {
  tfc_flash_attention_bwd<false, 128, 128, true>(q, k, v, o, dout, dq, dk, dv, 1LL, 32LL, 8LL,
                                                 2048LL, 2048LL, 0LL, 0.08838834764f,
                                                 flash_bwd_lse, flash_bwd_delta,
                                                 flash_bwd_counters);
}
