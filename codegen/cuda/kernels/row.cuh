// tfc's CUDA kernel library: row kernels, one warp a row.
//
// A block of (32, 8) threads takes 8 rows: warp threadIdx.y takes row
// blockIdx.x * 8 + threadIdx.y, its lanes stride over the row's columns
// (consecutive lanes, consecutive addresses), and the row's sums and maxima
// are warp reductions (tfc_warp_sum / tfc_warp_max: a fixed shuffle tree, so
// the same bits on every run). Launch: block (32, 8, 1), grid
// (ceil(rows / 8), 1, 1). Elements are loaded with tfc_as_float and stored
// with tfc_store (prelude.cuh), so In and Out may be float, bf16 (unsigned short) or f16.
#ifndef TFC_KERNELS_ROW_CUH
#define TFC_KERNELS_ROW_CUH

#include "cooperative.cuh"

constexpr int kTfcRowsPerBlock = 8;

// The row of this warp, or -1 past the last.
__device__ __forceinline__ long long tfc_warp_row(long long rows) {
  const long long row = (long long)blockIdx.x * kTfcRowsPerBlock + threadIdx.y;
  return row < rows ? row : -1;
}

// softmax (kLog: log_softmax) of each row of width elements.
template <bool kLog, typename In, typename Out>
__device__ __forceinline__ void tfc_softmax_rows(const In* x, Out* y, long long rows,
                                                 long long width) {
  const long long row = tfc_warp_row(rows);
  if (row < 0) return;  // a whole warp leaves: no collective waits for it
  const In* xr = x + row * width;
  Out* yr = y + row * width;
  const int lane = (int)threadIdx.x;
  float m = -__int_as_float(0x7f800000);
  for (long long j = lane; j < width; j += 32) m = tfc_maximumf(m, tfc_as_float(xr[j]));
  m = tfc_warp_max(m);
  float s = 0.0f;
  for (long long j = lane; j < width; j += 32) s += expf(tfc_as_float(xr[j]) - m);
  s = tfc_warp_sum(s);
  const float log_s = logf(s);
  for (long long j = lane; j < width; j += 32) {
    const float v = tfc_as_float(xr[j]) - m;
    tfc_store(yr + j, kLog ? v - log_s : expf(v) / s);
  }
}

// layer_norm (kCenter) or rms_norm of each row of width elements, then times
// w[j] and plus b[j] where given (null: none).
template <bool kCenter, typename In, typename Out, typename W, typename B>
__device__ __forceinline__ void tfc_norm_rows(const In* x, Out* y, const W* w, const B* b,
                                              long long rows, long long width, float eps) {
  const long long row = tfc_warp_row(rows);
  if (row < 0) return;
  const In* xr = x + row * width;
  Out* yr = y + row * width;
  const int lane = (int)threadIdx.x;
  float mean = 0.0f;
  if (kCenter) {
    for (long long j = lane; j < width; j += 32) mean += tfc_as_float(xr[j]);
    mean = tfc_warp_sum(mean) / (float)width;
  }
  float sq = 0.0f;
  for (long long j = lane; j < width; j += 32) {
    const float d = tfc_as_float(xr[j]) - mean;
    sq += d * d;
  }
  sq = tfc_warp_sum(sq);
  const float inv = 1.0f / sqrtf(sq / (float)width + eps);
  for (long long j = lane; j < width; j += 32) {
    float v = (tfc_as_float(xr[j]) - mean) * inv;
    if (w != nullptr) v = v * tfc_as_float(w[j]);
    if (b != nullptr) v = v + tfc_as_float(b[j]);
    tfc_store(yr + j, v);
  }
}

#endif  // TFC_KERNELS_ROW_CUH
