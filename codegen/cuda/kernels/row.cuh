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

// ---- Cross-entropy: a row's loss from one pass over its logits ----

// The log-sum-exp of a row as (m, s): log(s) + m. One pass: each lane keeps a running max m
// of its columns and the sum s of exp(x - m), rescaled when m grows; the lanes then merge
// theirs in a fixed order. As the CPU's two passes (max, then sum): a NaN or +inf logit
// makes s NaN, a -inf logit adds 0, a row of -inf gives m = -inf and s = 0.
template <typename In>
__device__ __forceinline__ void tfc_row_logsumexp(const In* xr, long long width, float* m_out,
                                                  float* s_out) {
  const float inf = __int_as_float(0x7f800000);
  float m = -inf, s = 0.0f;
  for (long long j = (long long)threadIdx.x; j < width; j += 32) {
    const float v = tfc_as_float(xr[j]);
    if (v != v || v == inf) {
      s = __int_as_float(0x7fc00000);
    } else if (v > m) {
      s = s * expf(m - v) + 1.0f;
      m = v;
    } else if (v != -inf) {
      s += expf(v - m);
    }
  }
  const float row_m = tfc_warp_max(m);
  *s_out = tfc_warp_sum(m == -inf ? (s != s ? s : 0.0f) : s * expf(m - row_m));
  *m_out = row_m;
}

// The mean over the rows whose target is not `ignore` of log-sum-exp(x_r) - x_r[t_r] (0 when
// no row counts), into loss[0]; a target out of [0, width) reports TFC_KERNEL_ERROR_TARGET
// and does not count. Launch: block (32, 8, 1), grid (B, 1, 1) with B <= the blocks that
// `partials` (2 B floats) holds; `done` starts at 0 and is 0 again after the launch. Warps
// take rows B * 8 apart, each block sums its warps' losses in warp order, and the last block
// to finish (a ticket from `done`) sums the blocks' in block order: the same bits on every run,
// whatever order the blocks run in. Launches of one kernel must not overlap (one stream).
template <typename In, typename Target>
__device__ __forceinline__ void tfc_cross_entropy_rows(const In* x, const Target* targets,
                                                       float* loss, long long rows,
                                                       long long width, long long ignore,
                                                       float* partials, unsigned* done) {
  TFC_SHARED(float, warp_parts, 2 * kTfcRowsPerBlock);
  const int warp = (int)threadIdx.y;
  float total = 0.0f, count = 0.0f;  // the same in every lane of the warp
  for (long long row = (long long)blockIdx.x * kTfcRowsPerBlock + warp; row < rows;
       row += (long long)gridDim.x * kTfcRowsPerBlock) {
    const long long t = (long long)targets[row];
    if (t == ignore) continue;
    if (t < 0 || t >= width) {
      if (threadIdx.x == 0) tfc_report(TFC_KERNEL_ERROR_TARGET);
      continue;
    }
    float m, s;
    tfc_row_logsumexp(x + row * width, width, &m, &s);
    total += logf(s) + m - tfc_as_float(x[row * width + t]);
    count += 1.0f;
  }
  if (threadIdx.x == 0) {
    warp_parts[2 * warp] = total;
    warp_parts[2 * warp + 1] = count;
  }
  __syncthreads();
  if (threadIdx.x != 0 || warp != 0) return;
  float block_total = 0.0f, block_count = 0.0f;
  for (int w = 0; w < kTfcRowsPerBlock; ++w) {
    block_total += warp_parts[2 * w];
    block_count += warp_parts[2 * w + 1];
  }
  partials[2 * blockIdx.x] = block_total;
  partials[2 * blockIdx.x + 1] = block_count;
  __threadfence();  // the partials are visible before the ticket is
  if (atomicAdd(done, 1u) != gridDim.x - 1) return;
  __threadfence();
  const volatile float* parts = partials;
  float sum = 0.0f, n = 0.0f;
  for (unsigned b = 0; b < gridDim.x; ++b) {
    sum += parts[2 * b];
    n += parts[2 * b + 1];
  }
  loss[0] = n > 0.0f ? sum / n : 0.0f;
  *done = 0u;
}

// The gradient of that mean times dloss[0], one warp a row: softmax(x_r) - onehot(t_r),
// times dloss / (the rows whose target is not `ignore`); a row that does not count is 0 (an
// out-of-range target also reports TFC_KERNEL_ERROR_TARGET). Launch as the row kernels (a
// block of kTfcRowsPerBlock warps: they count the targets together).
template <typename In, typename Target, typename G, typename Out>
__device__ __forceinline__ void tfc_cross_entropy_grad_rows(const In* x, const Target* targets,
                                                            const G* dloss, Out* dx,
                                                            long long rows, long long width,
                                                            long long ignore) {
  // The counted rows, by the block's warps together (each a share of the targets, then the
  // shares added in warp order): exact, an integer below 2^24.
  TFC_SHARED(float, warp_counts, kTfcRowsPerBlock);
  const int lane = (int)threadIdx.x, warp = (int)threadIdx.y;
  float count = 0.0f;
  for (long long q = warp * 32 + lane; q < rows; q += 32 * kTfcRowsPerBlock)
    count += (long long)targets[q] != ignore ? 1.0f : 0.0f;
  count = tfc_warp_sum(count);
  if (lane == 0) warp_counts[warp] = count;
  __syncthreads();
  count = 0.0f;
  for (int w = 0; w < kTfcRowsPerBlock; ++w) {
    const float part = warp_counts[w];
    count += part;
  }
  const long long row = tfc_warp_row(rows);
  if (row < 0) return;  // after the barrier: every warp of the block counted
  const long long t = (long long)targets[row];
  const bool counted = t != ignore && t >= 0 && t < width;
  if (t != ignore && !counted && lane == 0) tfc_report(TFC_KERNEL_ERROR_TARGET);
  Out* dr = dx + row * width;
  if (!counted) {
    for (long long j = lane; j < width; j += 32) tfc_store(dr + j, 0.0f);
    return;
  }
  const In* xr = x + row * width;
  float m, s;
  tfc_row_logsumexp(xr, width, &m, &s);
  const float scale = tfc_as_float(dloss[0]) / count;
  for (long long j = lane; j < width; j += 32) {
    const float p = expf(tfc_as_float(xr[j]) - m) / s;
    tfc_store(dr + j, (p - (j == t ? 1.0f : 0.0f)) * scale);
  }
}

#endif  // TFC_KERNELS_ROW_CUH
