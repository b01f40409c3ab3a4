// tfc's CUDA kernel library: matrix products on tensor cores.
//
// tfc_gemm_tc_64x64: one thread block's 64x64 tile of
//   C(m, n) = sum_k A(m, k) * B(k, n)
// over 16-bit operands (bf16 or f16) with f32 accumulation, handed to an
// epilogue functor store(m, n, value) for every (m, n) inside M x N (bias,
// activation, type conversion, the layout of C are the caller's). Operands in
// memory: A(m, k) = A[m * lda + k], or A[k * lda + m] with kTransA;
// B(k, n) = B[k * ldb + n], or B[n * ldb + k] with kTransB. Any M, N, K
// (edges are zero-filled). Launch: block (128, 1, 1), grid (ceil(N / 64),
// ceil(M / 64), batch); a batched product offsets the pointers by blockIdx.z.
//
// Four warps in 2 x 2 each compute 32 x 32 as 2 x 4 mma.sync m16n8k16 tiles.
// Each k-step of 32 stages A and B in shared memory as 32-bit words of two
// k-adjacent elements (the fragments' packing), rows padded to 20 words so
// that a warp's fragment reads hit 32 different banks.
#ifndef TFC_KERNELS_GEMM_CUH
#define TFC_KERNELS_GEMM_CUH

#include "cooperative.cuh"

template <bool kBf16, bool kTransA, bool kTransB, typename Store>
__device__ __forceinline__ void tfc_gemm_tc_64x64(const unsigned short* A, const unsigned short* B,
                                                  long long M, long long N, long long K,
                                                  long long lda, long long ldb, Store store) {
  constexpr int kTile = 64, kStep = 32, kWords = kStep / 2, kStride = kWords + 4, kThreads = 128;
  TFC_SHARED(unsigned, a_tile, kTile * kStride);
  TFC_SHARED(unsigned, b_tile, kTile * kStride);
  const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane >> 2, t = lane & 3;
  const int warp_m = (warp / 2) * 32, warp_n = (warp % 2) * 32;
  const long long m0 = (long long)blockIdx.y * kTile, n0 = (long long)blockIdx.x * kTile;
  float acc[2][4][4];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  for (long long k0 = 0; k0 < K; k0 += kStep) {
    for (int i = tid; i < kTile * kWords; i += kThreads) {
      const int r = i / kWords, w = i % kWords;
      const long long k = k0 + 2 * w;
      const long long m = m0 + r, n = n0 + r;
      unsigned lo = 0, hi = 0;
      if (m < M && k < K) lo = kTransA ? A[k * lda + m] : A[m * lda + k];
      if (m < M && k + 1 < K) hi = kTransA ? A[(k + 1) * lda + m] : A[m * lda + k + 1];
      a_tile[r * kStride + w] = lo | (hi << 16);
      lo = 0;
      hi = 0;
      if (n < N && k < K) lo = kTransB ? B[n * ldb + k] : B[k * ldb + n];
      if (n < N && k + 1 < K) hi = kTransB ? B[n * ldb + k + 1] : B[(k + 1) * ldb + n];
      b_tile[r * kStride + w] = lo | (hi << 16);
    }
    __syncthreads();
    for (int kw = 0; kw < kWords; kw += 8) {  // one m16n8k16 step: 8 words of k
      unsigned a[2][4], b[4][2];
      for (int i = 0; i < 2; ++i) {
        const int row = warp_m + i * 16 + g;
        a[i][0] = a_tile[row * kStride + kw + t];
        a[i][1] = a_tile[(row + 8) * kStride + kw + t];
        a[i][2] = a_tile[row * kStride + kw + t + 4];
        a[i][3] = a_tile[(row + 8) * kStride + kw + t + 4];
      }
      for (int j = 0; j < 4; ++j) {
        const int col = warp_n + j * 8 + g;
        b[j][0] = b_tile[col * kStride + kw + t];
        b[j][1] = b_tile[col * kStride + kw + t + 4];
      }
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) tfc_mma_m16n8k16<kBf16>(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // the next step overwrites the tiles
  }

  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 4; ++e) {
        const long long m = m0 + warp_m + i * 16 + g + (e >= 2 ? 8 : 0);
        const long long n = n0 + warp_n + j * 8 + 2 * t + (e & 1);
        if (m < M && n < N) store(m, n, acc[i][j][e]);
      }
}

// tfc_gemm_tf32_64x64: the same tile, operands and epilogue for f32 operands on tensor cores
// through TF32 (what `tfc --cuda-tf32` asks for, as PyTorch's allow_tf32): each operand
// rounded to TF32 (10 bits of mantissa, tfc_round_tf32) when staged, products exact and
// sums in f32. Launch: block (128, 1, 1), grid (ceil(N / 64), ceil(M / 64), batch). Four
// warps in 2 x 2 each compute 32 x 32 as 2 x 4 mma.sync m16n8k8 tiles; each k-step of 32
// stages A as [m][k] and B as [n][k] f32 words, rows padded to 36 words so that a warp's
// fragment reads hit 32 different banks.
template <bool kTransA, bool kTransB, typename Store>
__device__ __forceinline__ void tfc_gemm_tf32_64x64(const float* A, const float* B, long long M,
                                                    long long N, long long K, long long lda,
                                                    long long ldb, Store store) {
  constexpr int kTile = 64, kStep = 32, kStride = kStep + 4, kThreads = 128;
  TFC_SHARED(unsigned, a_tile, kTile * kStride);
  TFC_SHARED(unsigned, b_tile, kTile * kStride);
  const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane >> 2, t = lane & 3;
  const int warp_m = (warp / 2) * 32, warp_n = (warp % 2) * 32;
  const long long m0 = (long long)blockIdx.y * kTile, n0 = (long long)blockIdx.x * kTile;
  float acc[2][4][4];
  TFC_UNROLL
  for (int i = 0; i < 2; ++i)
    TFC_UNROLL
    for (int j = 0; j < 4; ++j)
      TFC_UNROLL
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  for (long long k0 = 0; k0 < K; k0 += kStep) {
    // Consecutive threads read consecutive addresses of whichever layout the operand has.
    for (int i = tid; i < kTile * kStep; i += kThreads) {
      const int ar = kTransA ? i % kTile : i / kStep, ak = kTransA ? i / kTile : i % kStep;
      const long long m = m0 + ar, ka = k0 + ak;
      a_tile[ar * kStride + ak] =
          m < M && ka < K ? tfc_round_tf32(kTransA ? A[ka * lda + m] : A[m * lda + ka]) : 0u;
      const int bn = kTransB ? i / kStep : i % kTile, bk = kTransB ? i % kStep : i / kTile;
      const long long n = n0 + bn, kb = k0 + bk;
      b_tile[bn * kStride + bk] =
          n < N && kb < K ? tfc_round_tf32(kTransB ? B[n * ldb + kb] : B[kb * ldb + n]) : 0u;
    }
    __syncthreads();
    TFC_UNROLL
    for (int kk = 0; kk < kStep; kk += 8) {  // one m16n8k8 step
      unsigned a[2][4], b[4][2];
      TFC_UNROLL
      for (int i = 0; i < 2; ++i) {
        const int row = warp_m + i * 16 + g;
        a[i][0] = a_tile[row * kStride + kk + t];
        a[i][1] = a_tile[(row + 8) * kStride + kk + t];
        a[i][2] = a_tile[row * kStride + kk + t + 4];
        a[i][3] = a_tile[(row + 8) * kStride + kk + t + 4];
      }
      TFC_UNROLL
      for (int j = 0; j < 4; ++j) {
        const int col = warp_n + j * 8 + g;
        b[j][0] = b_tile[col * kStride + kk + t];
        b[j][1] = b_tile[col * kStride + kk + t + 4];
      }
      TFC_UNROLL
      for (int i = 0; i < 2; ++i)
        TFC_UNROLL
        for (int j = 0; j < 4; ++j) tfc_mma_m16n8k8_tf32(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // the next step overwrites the tiles
  }

  TFC_UNROLL
  for (int i = 0; i < 2; ++i)
    TFC_UNROLL
    for (int j = 0; j < 4; ++j)
      TFC_UNROLL
      for (int e = 0; e < 4; ++e) {
        const long long m = m0 + warp_m + i * 16 + g + (e >= 2 ? 8 : 0);
        const long long n = n0 + warp_n + j * 8 + 2 * t + (e & 1);
        if (m < M && n < N) store(m, n, acc[i][j][e]);
      }
}

// tfc_gemm_simt_64x64: the same tile, operands and epilogue for f32 operands (or any types
// tfc_as_float reads) in exact f32 on the CUDA cores: every
// C(m, n) is fmaf over k in order from 0, as a kernel of one thread per output computes it,
// so the tiling changes no bit. Launch: block (256, 1, 1), grid (ceil(N / 64), ceil(M / 64),
// batch). 16 x 16 threads each compute 4 x 4 outputs strided by 16 (rows ty + 16 i, columns
// tx + 16 j), so that a warp's shared reads are broadcasts (A) or consecutive words (B); each
// k-step of 16 stages A (as [k][m]) and B (as [k][n]) in shared memory as f32.
template <bool kTransA, bool kTransB, typename TA, typename TB, typename Store>
__device__ __forceinline__ void tfc_gemm_simt_64x64(const TA* A, const TB* B, long long M,
                                                    long long N, long long K, long long lda,
                                                    long long ldb, Store store) {
  constexpr int kTile = 64, kStep = 16, kStride = kTile + 4, kThreads = 256, kPer = 4;
  TFC_SHARED(float, a_tile, kStep * kStride);
  TFC_SHARED(float, b_tile, kStep * kStride);
  const int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16;
  const long long m0 = (long long)blockIdx.y * kTile, n0 = (long long)blockIdx.x * kTile;
  float acc[kPer][kPer];
  TFC_UNROLL
  for (int i = 0; i < kPer; ++i)
    TFC_UNROLL
    for (int j = 0; j < kPer; ++j) acc[i][j] = 0.0f;

  for (long long k0 = 0; k0 < K; k0 += kStep) {
    // Consecutive threads read consecutive addresses of whichever layout the operand has.
    for (int i = tid; i < kTile * kStep; i += kThreads) {
      const int ar = kTransA ? i % kTile : i / kStep, ak = kTransA ? i / kTile : i % kStep;
      const long long m = m0 + ar, ka = k0 + ak;
      a_tile[ak * kStride + ar] =
          m < M && ka < K ? tfc_as_float(kTransA ? A[ka * lda + m] : A[m * lda + ka]) : 0.0f;
      const int bc = kTransB ? i / kStep : i % kTile, bk = kTransB ? i % kStep : i / kTile;
      const long long n = n0 + bc, kb = k0 + bk;
      b_tile[bk * kStride + bc] =
          n < N && kb < K ? tfc_as_float(kTransB ? B[n * ldb + kb] : B[kb * ldb + n]) : 0.0f;
    }
    __syncthreads();
    // Only the k < K of the last step: an fmaf of the zero fill could turn a -0 sum into +0.
    const int steps = K - k0 < kStep ? (int)(K - k0) : kStep;
    for (int kk = 0; kk < steps; ++kk) {
      float a[kPer], b[kPer];
      TFC_UNROLL
      for (int i = 0; i < kPer; ++i) a[i] = a_tile[kk * kStride + ty + 16 * i];
      TFC_UNROLL
      for (int j = 0; j < kPer; ++j) b[j] = b_tile[kk * kStride + tx + 16 * j];
      TFC_UNROLL
      for (int i = 0; i < kPer; ++i)
        TFC_UNROLL
        for (int j = 0; j < kPer; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // the next step overwrites the tiles
  }

  TFC_UNROLL
  for (int i = 0; i < kPer; ++i)
    TFC_UNROLL
    for (int j = 0; j < kPer; ++j) {
      const long long m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < M && n < N) store(m, n, acc[i][j]);
    }
}

// tfc_gemv: C = A B for kRows <= 8 rows of A (a decode step's tokens), at the pace of
// reading B once, f32 accumulation for operands of any element type; A row-major
// (A(m, k) = A[m * lda + k]), B as above; store(m, n, value) as the tiles. The tiles would
// leave most of a GPU idle here: N / 64 blocks whose 64 rows are mostly past M.
//   - kTransB (B as [N][K], LLaMA's weights): one warp a column n, its lanes striding over
//     k (coalesced), a shuffle tree for the sum. Launch: block (32, 8, 1), grid
//     (ceil(N / 8), 1, batch).
//   - otherwise (B as [K][N], GPT-2's): a block takes 32 columns, a lane each (coalesced),
//     its 32 warps striding over k; the warps' partial sums meet in shared memory in warp
//     order. Launch: block (32, 32, 1), grid (ceil(N / 32), 1, batch).
// Fixed orders: the same bits on every run.
template <int kRows, bool kTransB, typename TA, typename TB, typename Store>
__device__ __forceinline__ void tfc_gemv(const TA* A, const TB* B, long long N, long long K,
                                         long long lda, long long ldb, Store store) {
  static_assert(kRows >= 1 && kRows <= 8, "tfc_gemv takes 1 to 8 rows");
  const int lane = (int)threadIdx.x, warp = (int)threadIdx.y;
  float acc[kRows];
  TFC_UNROLL
  for (int m = 0; m < kRows; ++m) acc[m] = 0.0f;
  if (kTransB) {
    const long long n = (long long)blockIdx.x * 8 + warp;
    if (n >= N) return;  // a whole warp leaves: no collective waits for it
    const TB* bn = B + n * ldb;
    for (long long k = lane; k < K; k += 32) {
      const float b = tfc_as_float(bn[k]);
      TFC_UNROLL
      for (int m = 0; m < kRows; ++m) acc[m] = fmaf(tfc_as_float(A[m * lda + k]), b, acc[m]);
    }
    TFC_UNROLL
    for (int m = 0; m < kRows; ++m) {
      const float v = tfc_warp_sum(acc[m]);
      if (lane == 0) store(m, n, v);
    }
    return;
  }
  TFC_SHARED(float, partial, 32 * kRows * 32);
  const long long n = (long long)blockIdx.x * 32 + lane;
  if (n < N)
    for (long long k = warp; k < K; k += 32) {
      const float b = tfc_as_float(B[k * ldb + n]);
      TFC_UNROLL
      for (int m = 0; m < kRows; ++m) acc[m] = fmaf(tfc_as_float(A[m * lda + k]), b, acc[m]);
    }
  TFC_UNROLL
  for (int m = 0; m < kRows; ++m) partial[(warp * kRows + m) * 32 + lane] = acc[m];
  __syncthreads();
  if (warp >= kRows || n >= N) return;
  float v = 0.0f;
  for (int w = 0; w < 32; ++w) v += partial[(w * kRows + warp) * 32 + lane];
  store(warp, n, v);
}

#endif  // TFC_KERNELS_GEMM_CUH
