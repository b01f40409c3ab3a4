// tfc's CUDA kernel library: sum, mean and max over a contiguous block of dimensions.
//
// The input seen as [O, R, I] (the dimensions before, inside and after the reduced block),
// the output as [O, I]. Every lane keeps its own partial over a strided share of R and the
// partials meet in a fixed order (a warp's shuffle tree, then the warps in order), so a run
// gives the same bits every time. f32 accumulation; max is NaN-propagating (tfc_maximumf).
//   - I == 1 (the reduced elements contiguous: a row's sum or max): tfc_reduce_rows, one
//     warp an output, launched as the row kernels (block (32, 8), grid ceil(O / 8)).
//   - I > 1 (a column's sum, as a bias gradient over the rows): tfc_reduce_columns, a block
//     of kTfcReduceWarps warps takes 32 consecutive i of one o, a lane a column (coalesced),
//     the warps striding over R. Launch: block (32, kTfcReduceWarps), grid
//     (O * ceil(I / 32)).
#ifndef TFC_KERNELS_REDUCE_CUH
#define TFC_KERNELS_REDUCE_CUH

#include "row.cuh"  // tfc_warp_row

// The reduction (the ABI's TFC_REDUCE_* name the collectives' reductions).
enum tfc_reduce_kind { kTfcReduceSum, kTfcReduceMean, kTfcReduceMax };

constexpr int kTfcReduceWarps = 32;

template <int kKind>
__device__ __forceinline__ float tfc_reduce_init() {
  return kKind == kTfcReduceMax ? -__int_as_float(0x7f800000) : 0.0f;
}
template <int kKind>
__device__ __forceinline__ float tfc_reduce_combine(float a, float b) {
  return kKind == kTfcReduceMax ? tfc_maximumf(a, b) : a + b;
}
template <int kKind>
__device__ __forceinline__ float tfc_reduce_finish(float v, long long count) {
  return kKind == kTfcReduceMean ? v / (float)count : v;
}

template <int kKind, typename In, typename Out>
__device__ __forceinline__ void tfc_reduce_rows(const In* x, Out* y, long long outputs,
                                                long long count) {
  const long long o = tfc_warp_row(outputs);
  if (o < 0) return;
  const In* xr = x + o * count;
  float acc = tfc_reduce_init<kKind>();
  for (long long r = threadIdx.x; r < count; r += 32)
    acc = tfc_reduce_combine<kKind>(acc, tfc_as_float(xr[r]));
  acc = kKind == kTfcReduceMax ? tfc_warp_max(acc) : tfc_warp_sum(acc);
  if (threadIdx.x == 0) tfc_store(y + o, tfc_reduce_finish<kKind>(acc, count));
}

template <int kKind, typename In, typename Out>
__device__ __forceinline__ void tfc_reduce_columns(const In* x, Out* y, long long count,
                                                   long long inner) {
  TFC_SHARED(float, partial, kTfcReduceWarps * 32);
  const long long tiles = (inner + 31) / 32;
  const long long o = (long long)blockIdx.x / tiles;
  const long long i = ((long long)blockIdx.x % tiles) * 32 + threadIdx.x;
  const int warp = (int)threadIdx.y;
  float acc = tfc_reduce_init<kKind>();
  if (i < inner) {
    const In* xo = x + o * count * inner + i;
    for (long long r = warp; r < count; r += kTfcReduceWarps)
      acc = tfc_reduce_combine<kKind>(acc, tfc_as_float(xo[r * inner]));
  }
  partial[warp * 32 + threadIdx.x] = acc;
  __syncthreads();
  if (warp != 0 || i >= inner) return;
  float v = tfc_reduce_init<kKind>();
  for (int w = 0; w < kTfcReduceWarps; ++w)
    v = tfc_reduce_combine<kKind>(v, partial[w * 32 + threadIdx.x]);
  tfc_store(y + o * inner + i, tfc_reduce_finish<kKind>(v, count));
}

#endif  // TFC_KERNELS_REDUCE_CUH
