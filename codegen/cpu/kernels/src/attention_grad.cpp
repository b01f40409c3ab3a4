// Attention backward: tfc_k_attention_grad_f32, and the forward's path for small heads
// and short sequences (attention_small, reached from tfc_k_attention_kvx_f32).
//
// FlashAttention's backward in its simplest exact form: for every query row the
// probabilities are recomputed from Q and K (never read from a saved T x T
// matrix), and with delta = do . o (= sum_j p_j dp_j):
//   dv_j += p_j do,  dp_j = do . v_j,  ds_j = p_j (dp_j - delta),
//   dq   += scale ds_j k_j,  dk_j += scale ds_j q.
// Work is split by (batch, key/value head): each part owns the dK and dV rows of
// its head and the dQ rows of the query heads that share it, so no two threads
// ever write the same element and the sums run in one fixed order.
//
// Query rows go in tiles of kRows (attention_grad_part): a tile's scores and dP are
// computed kCols keys at a time with the sums in registers, each K^T / V^T element loaded
// once for the tile instead of once a row. dK and dV are updated once per block of kBlock
// rows, kKeys keys by up to 64 columns in registers across the block's rows, so that each
// dK and dV element is read and written once a block, and each Q or dO vector loaded once
// for kKeys keys (one row at a time, the loads and stores of those rows bound the
// backward at a fifth of its FLOP floor at T=1024; in tiles of 4 rows, each dK and dV row
// read and written once a tile, 2.6x faster; by blocks of 16 rows, with K^T and V^T in
// tiles of kCols keys and the softmax's max and sum in vectors, 1.65x faster again:
// B4 H12 T1024 D64 causal, one thread, 340 -> 206 ms).
// Every sum keeps one order whatever the thread count (over c for a score, over query rows
// i for a dK or dV row, over keys j for a dQ row), with fused multiply-adds where the CPU
// has them.
#include "internal.h"
#include "tfc_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

namespace {

using tfc_kern::causal_limit;

struct AttentionGrad {
  const float *q, *k, *v, *o, *dout;
  float *dq, *dk, *dv;
  int64_t heads, kv_heads, tq, tk, d, dv_dim;
  int32_t causal;
  int64_t offset;
  float scale;
};

constexpr int64_t kRows = 4;    // query rows per register tile of scores, dP and dQ
constexpr int64_t kCols = 32;   // keys per register tile of scores (two AVX-512 vectors)
constexpr int64_t kBlock = 16;  // query rows whose dK and dV sums stay in registers
constexpr int64_t kKeys = 4;    // keys per register tile of dK and dV
static_assert(kBlock % kRows == 0, "blocks of whole row tiles");

// Vectors of the widest registers of each clone (one zmm, two ymm, four xmm). Everything
// using them is inlined into the clones, so no vector ever crosses a call: GCC's -Wpsabi
// note (such a call's ABI differs between the clones) does not apply. (No pop: GCC reports
// the small path's lambdas at the end of the unit.) Built with -ffp-contract=fast
// (CMakeLists.txt), a * b + c on them is one FMA where the clone has it.
#pragma GCC diagnostic ignored "-Wpsabi"

constexpr int kLanes = 16;
// GCC vectors of N floats, whatever the clone's register width.
template <int N>
struct Vec {
  typedef float type __attribute__((vector_size(N * sizeof(float))));
  typedef int32_t mask __attribute__((vector_size(N * sizeof(int32_t))));
};
typedef Vec<kLanes>::type VT;  // a row of scores, one lane per key
typedef Vec<kLanes>::mask MT;

template <class T>
__attribute__((always_inline)) inline T load_vec(const float* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
__attribute__((always_inline)) inline void store_vec(float* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// The fixed tree over a row's lanes: lane j takes op(v[j], v[j + w]) for w = 8, 4, 2, 1,
// in registers (shuffles), and lane 0 holds the result.
template <class Op>
__attribute__((always_inline)) inline float lane_tree(VT v, Op op) {
  static_assert(kLanes == 16, "the shuffles below are for 16 lanes");
  v = op(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
  v = op(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
  v = op(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
  v = op(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
  return v[0];
}
// The max and the sum of a vector's lanes through the fixed tree (the max as `y > x ? y :
// x`: a NaN lane never wins over a number to its left).
__attribute__((always_inline)) inline float lane_max(VT v) {
  return lane_tree(v, [](VT x, VT y) { return y > x ? y : x; });
}
__attribute__((always_inline)) inline float lane_sum(VT v) {
  return lane_tree(v, [](VT x, VT y) { return x + y; });
}

// A row's max and sum: whole vectors in kLanes lanes, the lanes through the fixed tree,
// then the tail in order. The max equals the one of a scalar loop bit for bit (a max
// does not depend on order; NaNs are skipped as `x > m ? x : m` skips them); the sum has
// one fixed order (lanes, tree, tail).
__attribute__((always_inline)) inline float row_max(const float* __restrict x, int64_t n) {
  float m = -INFINITY;
  int64_t j = 0;
  if (n >= kLanes) {
    VT mv = VT{} - INFINITY;
    for (; j + kLanes <= n; j += kLanes) {
      const VT v = load_vec<VT>(x + j);
      mv = v > mv ? v : mv;
    }
    m = lane_max(mv);
  }
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

__attribute__((always_inline)) inline float row_sum(const float* __restrict x, int64_t n) {
  float sum = 0.0f;
  int64_t j = 0;
  if (n >= kLanes) {
    VT acc = VT{};
    for (; j + kLanes <= n; j += kLanes) acc += load_vec<VT>(x + j);
    sum = lane_sum(acc);
  }
  for (; j < n; ++j) sum += x[j];
  return sum;
}

// out[r][j0 .. j0 + kCols) = sum over c of x_r[c] * yt[c][j0 ..] for the block's rows,
// j0 < cols, each sum over c in order in a register; yt's columns come in tiles of kCols,
// tile t at yt + t * tstride with rows ldy apart (a row-major yt: tstride = kCols), at
// least `cols` (a multiple of kCols) columns; out has row stride ldo.
__attribute__((always_inline)) inline void block_products(const float* const* x, int64_t n,
                                                          const float* __restrict yt, int64_t ldy,
                                                          int64_t tstride, int64_t cols,
                                                          float* __restrict out, int64_t ldo) {
  static_assert(kCols == 2 * kLanes, "two vectors a row");
  for (int64_t j0 = 0; j0 < cols; j0 += kCols) {
    VT acc[kRows][2] = {};
    const float* __restrict yj = yt + j0 / kCols * tstride;
    for (int64_t c = 0; c < n; ++c) {
      const VT y0 = load_vec<VT>(yj + c * ldy), y1 = load_vec<VT>(yj + c * ldy + 16);
      for (int64_t r = 0; r < kRows; ++r) {
        const float xr = x[r][c];
        acc[r][0] = xr * y0 + acc[r][0];
        acc[r][1] = xr * y1 + acc[r][1];
      }
    }
    for (int64_t r = 0; r < kRows; ++r) {
      store_vec(out + r * ldo + j0, acc[r][0]);
      store_vec(out + r * ldo + j0 + 16, acc[r][1]);
    }
  }
}

// y[j][c0 ..] += sum over the block's rows r < nb, in order, of w_r[j] * x_r[c0 ..] for
// keys j0 <= j < j0 + nk: kKeys dK or dV rows by NCV vectors of c in registers across the
// block's rows, so each x_r vector is loaded once for kKeys keys and each y element read
// and written once a block. A row whose causal limit is at most j0 is skipped: its w are
// zero there, and adding a zero product leaves a sum unchanged (y starts at +0 and a sum
// in round-to-nearest never becomes -0), so the bits equal those of adding every row.
template <int NCV>
__attribute__((always_inline)) inline void key_tile(float* __restrict y, int64_t ldy, int64_t j0,
                                                    int64_t nk, int64_t c0,
                                                    const float* __restrict w, int64_t ldw,
                                                    const float* const* x, const int64_t* lim,
                                                    int64_t nb) {
  VT acc[kKeys][NCV];
  for (int64_t t = 0; t < kKeys; ++t) {
    for (int v = 0; v < NCV; ++v) {
      acc[t][v] = t < nk ? load_vec<VT>(y + (j0 + t) * ldy + c0 + v * kLanes) : VT{};
    }
  }
  for (int64_t r = 0; r < nb; ++r) {
    if (lim[r] <= j0) continue;
    VT xv[NCV];
    for (int v = 0; v < NCV; ++v) xv[v] = load_vec<VT>(x[r] + c0 + v * kLanes);
    const float* __restrict wr = w + r * ldw + j0;
    for (int64_t t = 0; t < kKeys; ++t) {
      const float wt = wr[t];
      for (int v = 0; v < NCV; ++v) acc[t][v] = wt * xv[v] + acc[t][v];
    }
  }
  for (int64_t t = 0; t < nk; ++t) {
    for (int v = 0; v < NCV; ++v) store_vec(y + (j0 + t) * ldy + c0 + v * kLanes, acc[t][v]);
  }
}

// dV += P^T dO or dK += dS^T Q over a block of nb query rows: y is tk x n (row stride n),
// w the block's rows of P or dS (ldw apart, zero past each row's limit up to the tiles
// that cover `cols`), x the block's rows of dO or Q. Each element's sum runs over the
// rows in order, as one row at a time would.
__attribute__((always_inline)) inline void key_updates(float* __restrict y, int64_t n,
                                                       const float* __restrict w, int64_t ldw,
                                                       const float* const* x,
                                                       const int64_t* lim, int64_t nb,
                                                       int64_t cols) {
  for (int64_t j0 = 0; j0 < cols; j0 += kKeys) {
    const int64_t nk = cols - j0 < kKeys ? cols - j0 : kKeys;
    int64_t c0 = 0;
    for (; c0 + 4 * kLanes <= n; c0 += 4 * kLanes) {
      key_tile<4>(y, n, j0, nk, c0, w, ldw, x, lim, nb);
    }
    for (; c0 + kLanes <= n; c0 += kLanes) key_tile<1>(y, n, j0, nk, c0, w, ldw, x, lim, nb);
    for (; c0 < n; ++c0) {
      for (int64_t t = 0; t < nk; ++t) {
        float acc = y[(j0 + t) * n + c0];
        for (int64_t r = 0; r < nb; ++r) {
          if (lim[r] > j0) acc = w[r * ldw + j0 + t] * x[r][c0] + acc;
        }
        y[(j0 + t) * n + c0] = acc;
      }
    }
  }
}

// Cloned per ISA (the library's other kernels dispatch through isa()): the loops below
// run along j or along a row of d elements, independent lanes that vectorize, while every
// sum keeps its order, so a machine gives the same bits at any thread count.
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
void attention_grad_part(void* ctx, int64_t begin, int64_t end) {
  const AttentionGrad& a = *static_cast<const AttentionGrad*>(ctx);
  const int64_t group = a.heads / a.kv_heads;
  const int64_t tk = a.tk, d = a.d, dvd = a.dv_dim;
  const int64_t ld = (tk + kCols - 1) / kCols * kCols;  // keys, padded to whole tiles
  const int64_t ldk = (d + kCols - 1) / kCols * kCols;  // K's columns, padded likewise
  // This thread's scratch: the head's K and V transposed (d x ld, dv x ld) so that a
  // score is a sum along c of vectors along j, in tiles of kCols keys (a tile's d rows
  // one contiguous run: the score products read them in order), and K with padded rows
  // (ld x ldk) for dQ, all zero-padded; the block's probabilities and dS (kBlock x ld
  // each), a row tile's dP (kRows x ld) and dQ rows (kRows x ldk), and zeros standing in
  // for rows past the last.
  const int64_t zeros = std::max({ld, ldk, dvd});  // as long as any row it stands in for
  float* __restrict kt = tfc_kern::scratch(
      6, static_cast<size_t>(ld * (d + dvd + ldk + 2 * kBlock + kRows) + kRows * ldk + zeros));
  float* __restrict vt = kt + ld * d;
  float* __restrict kp = vt + ld * dvd;
  float* __restrict p = kp + ld * ldk;
  float* __restrict ds = p + kBlock * ld;
  float* __restrict dp = ds + kBlock * ld;
  float* __restrict dqb = dp + kRows * ld;
  float* __restrict zero = dqb + kRows * ldk;
  std::memset(zero, 0, sizeof(float) * zeros);
  std::memset(kp, 0, sizeof(float) * ld * ldk);
  for (int64_t part = begin; part < end; ++part) {
    const int64_t b = part / a.kv_heads, hk = part % a.kv_heads;
    const float* kh = a.k + (b * a.kv_heads + hk) * tk * d;
    const float* vh = a.v + (b * a.kv_heads + hk) * tk * dvd;
    float* dkh = a.dk + (b * a.kv_heads + hk) * tk * d;
    float* dvh = a.dv + (b * a.kv_heads + hk) * tk * dvd;
    std::memset(dkh, 0, sizeof(float) * tk * d);
    std::memset(dvh, 0, sizeof(float) * tk * dvd);
    for (int64_t j0 = 0; j0 < ld; j0 += kCols) {
      const int64_t nj = tk - j0 < kCols ? tk - j0 : kCols;
      float* kth = kt + j0 * d;
      float* vth = vt + j0 * dvd;
      for (int64_t c = 0; c < d; ++c) {
        for (int64_t j = 0; j < nj; ++j) kth[c * kCols + j] = kh[(j0 + j) * d + c];
        for (int64_t j = nj; j < kCols; ++j) kth[c * kCols + j] = 0.0f;
      }
      for (int64_t c = 0; c < dvd; ++c) {
        for (int64_t j = 0; j < nj; ++j) vth[c * kCols + j] = vh[(j0 + j) * dvd + c];
        for (int64_t j = nj; j < kCols; ++j) vth[c * kCols + j] = 0.0f;
      }
    }
    for (int64_t j = 0; j < tk; ++j) std::memcpy(kp + j * ldk, kh + j * d, sizeof(float) * d);
    for (int64_t g = 0; g < group; ++g) {
      const int64_t h = hk * group + g;
      for (int64_t i0 = 0; i0 < a.tq; i0 += kBlock) {
        const int64_t nb = a.tq - i0 < kBlock ? a.tq - i0 : kBlock;
        const int64_t block0 = (b * a.heads + h) * a.tq + i0;
        const float* qb[kBlock];
        const float* dob[kBlock];
        int64_t lim[kBlock];
        int64_t cols = 0;  // keys any row of the block attends to
        for (int64_t r = 0; r < nb; ++r) {
          qb[r] = a.q + (block0 + r) * d;
          dob[r] = a.dout + (block0 + r) * dvd;
          lim[r] = causal_limit(a.causal, i0 + r, a.offset, tk);
          cols = lim[r] > cols ? lim[r] : cols;
        }
        const int64_t span = (cols + kCols - 1) / kCols * kCols;  // P and dS columns read
        // Row tiles: scores, dP, probabilities, dS and dQ, kRows rows at a time.
        for (int64_t s0 = 0; s0 < nb; s0 += kRows) {
          const int64_t nr = nb - s0 < kRows ? nb - s0 : kRows;
          const int64_t row0 = block0 + s0;
          const float* qr[kRows];
          const float* dor[kRows];
          const float* dsr[kRows];
          int64_t tcols = 0;  // keys any row of the tile attends to
          for (int64_t r = 0; r < kRows; ++r) {
            qr[r] = r < nr ? qb[s0 + r] : zero;
            dor[r] = r < nr ? dob[s0 + r] : zero;
            dsr[r] = r < nr ? ds + (s0 + r) * ld : zero;
            if (r < nr) tcols = lim[s0 + r] > tcols ? lim[s0 + r] : tcols;
          }
          if (tcols == 0) {
            std::memset(a.dq + row0 * d, 0, sizeof(float) * nr * d);
            for (int64_t r = 0; r < nr; ++r) {
              std::memset(p + (s0 + r) * ld, 0, sizeof(float) * span);
              std::memset(ds + (s0 + r) * ld, 0, sizeof(float) * span);
            }
            continue;
          }
          const int64_t tiles = (tcols + kCols - 1) / kCols * kCols;
          block_products(qr, d, kt, kCols, kCols * d, tiles, p + s0 * ld, ld);
          block_products(dor, dvd, vt, kCols, kCols * dvd, tiles, dp, ld);
          for (int64_t r = 0; r < nr; ++r) {
            const int64_t lm = lim[s0 + r];
            float* __restrict pr = p + (s0 + r) * ld;
            float* __restrict dpr = dp + r * ld;
            float* __restrict dsw = ds + (s0 + r) * ld;
            // Masked keys, up to the block's last tile: no probability, no gradient.
            for (int64_t j = lm; j < span; ++j) pr[j] = dsw[j] = 0.0f;
            if (lm == 0) continue;
            // Elementwise loops (the compiler vectorizes them), the max and the sum in
            // vectors of a fixed order (row_max, row_sum).
            for (int64_t j = 0; j < lm; ++j) pr[j] *= a.scale;
            const float max = row_max(pr, lm);
            for (int64_t j = 0; j < lm; ++j) pr[j] = tfc_kern::exp_f32(pr[j] - max);
            const float inv = 1.0f / row_sum(pr, lm);
            const float* __restrict oi = a.o + (row0 + r) * dvd;
            const float* __restrict doi = dor[r];
            float delta = 0.0f;
            for (int64_t c = 0; c < dvd; ++c) delta += doi[c] * oi[c];
            for (int64_t j = 0; j < lm; ++j) {
              pr[j] *= inv;
              dsw[j] = pr[j] * (dpr[j] - delta) * a.scale;
            }
          }
          // dQ rows: dS K, each a sum over the keys in order.
          block_products(dsr, tcols, kp, ldk, kCols, ldk, dqb, ldk);
          for (int64_t r = 0; r < nr; ++r) {
            std::memcpy(a.dq + (row0 + r) * d, dqb + r * ldk, sizeof(float) * d);
          }
        }
        // dV and dK rows: each a sum over the block's query rows in order.
        if (cols == 0) continue;
        key_updates(dvh, dvd, p, ld, dob, lim, nb, cols);
        key_updates(dkh, d, ds, ld, qb, lim, nb, cols);
      }
    }
  }
}

// Small heads and short key sequences (d = dv in {8, 16}, tk <= 32, as in the seed
// experiment's encoder-decoder), forward and backward: the loops above (and the forward's
// tiles, blocked for d = 64 and 128 keys) spend more time on loop control, padding and
// partial vectors than on arithmetic at run-time lengths of 8 to 17. Here every length but
// the causal limit is a compile-time constant; a row's first kLanes = 16 scores are one
// vector (keys past tk or past the causal limit masked to p = 0) and keys 16 to 31 a scalar
// tail (32 lanes, twice the registers, measured slower for the decoder's 17 keys); the
// part's dK and dV and a row's dQ or output accumulate in stack arrays that stay in L1.
// The max and the sum over the vector run as a fixed tree (halving kLanes), then the tail
// in order, so the bits depend on neither the thread count nor the clone's vector width
// (products are FMAs where the CPU has them, as in the rest of this file). Rows go in
// blocks of kLanes with one lane a row (attention_grad_lanes, attention_small_lanes); the
// one-row form takes a part's last few rows.
constexpr int kMaxKeys = 2 * kLanes;

bool small_shape(int64_t d, int64_t dv, int64_t tk) {
  return (d == 8 || d == 16) && dv == d && tk <= kMaxKeys;
}

inline float widen(uint16_t x, int kv_type) {
  return kv_type == tfc_kern::kBBf16 ? tfc_kern::bf16_to_f32(x) : tfc_kern::f16_to_f32(x);
}

// Transposes between kLanes rows of D floats (row-major, D * kLanes floats: D vectors)
// and D vectors along the rows, in shuffles: the element of row j, column c sits at flat
// index j * D + c, i.e. in vector (j * D + c) / kLanes, lane (j * D + c) % kLanes, and
// belongs in vector c, lane j. Each stage swaps bit B of the vector index with bit B of
// the lane (two two-source shuffles a pair of vectors); the stages commute, and each is
// its own inverse. D = 16: vector j, lane c; the four swaps give vector c, lane j. D = 8:
// vector j >> 1, lane (j & 1) * 8 + c; three swaps give vector c, lane (j & 1) * 8 +
// (j >> 1), and one shuffle a vector puts lane j in place. Data moves only: the same bits
// as element by element (16 * D scalar loads and stores a block; without them the seed
// experiment's attention, B64 H4 T16 D8, ran 16-19% faster forward and backward).
template <int B, int... L>
__attribute__((always_inline)) inline void swap_pair(VT& a, VT& b,
                                                     std::integer_sequence<int, L...>) {
  const VT lo = __builtin_shufflevector(a, b, ((L >> B) & 1 ? kLanes + L - (1 << B) : L)...);
  const VT hi = __builtin_shufflevector(a, b, ((L >> B) & 1 ? kLanes + L : L + (1 << B))...);
  a = lo;
  b = hi;
}

using LaneSeq = std::make_integer_sequence<int, kLanes>;

template <int B, int N>
__attribute__((always_inline)) inline void swap_bit(VT* v) {
  for (int i = 0; i < N; ++i) {
    if (!((i >> B) & 1)) swap_pair<B>(v[i], v[i | (1 << B)], LaneSeq());
  }
}

// D = 8's lane order after the swaps, (j & 1) * 8 + (j >> 1), to j (Forward) and back.
template <bool Forward, int... L>
__attribute__((always_inline)) inline VT lane_order(VT v, std::integer_sequence<int, L...>) {
  return Forward ? __builtin_shufflevector(v, v, ((L & 1) * 8 + (L >> 1))...)
                 : __builtin_shufflevector(v, v, (((L & 7) << 1) | (L >> 3))...);
}

template <int D>
__attribute__((always_inline)) inline void transpose_block(VT* v, bool to_lanes) {
  static_assert(kLanes == 16 && (D == 8 || D == 16), "the stages below are for 16 lanes");
  if (D == 8 && !to_lanes) {
    for (int c = 0; c < D; ++c) v[c] = lane_order<false>(v[c], LaneSeq());
  }
  swap_bit<0, D>(v);
  swap_bit<1, D>(v);
  swap_bit<2, D>(v);
  if (D == 16) swap_bit<3, D>(v);
  if (D == 8 && to_lanes) {
    for (int c = 0; c < D; ++c) v[c] = lane_order<true>(v[c], LaneSeq());
  }
}

// Rows [0, n) of a row-major block of D-float rows as D vectors along the rows (lanes >= n
// zero), and back. A whole block goes through the shuffles, straight from and to memory
// not just written (a vector load of a buffer just stored in pieces waits for the pieces:
// through a zero-padded copy the shuffles ran slower than element by element); a partial
// block element by element.
template <int D>
__attribute__((always_inline)) inline void rows_to_lanes(const float* rows, int n, VT* out) {
  if (n == kLanes) {
    for (int i = 0; i < D; ++i) out[i] = load_vec<VT>(rows + i * kLanes);
    transpose_block<D>(out, true);
    return;
  }
  alignas(64) float t[D][kLanes];
  for (int l = 0; l < kLanes; ++l) {
    for (int c = 0; c < D; ++c) t[c][l] = l < n ? rows[l * D + c] : 0.0f;
  }
  for (int c = 0; c < D; ++c) out[c] = load_vec<VT>(t[c]);
}

template <int D>
__attribute__((always_inline)) inline void lanes_to_rows(const VT* in, int n, float* rows) {
  if (n == kLanes) {
    VT v[D];
    for (int c = 0; c < D; ++c) v[c] = in[c];
    transpose_block<D>(v, false);
    for (int i = 0; i < D; ++i) store_vec(rows + i * kLanes, v[i]);
    return;
  }
  alignas(64) float t[D][kLanes];
  for (int c = 0; c < D; ++c) store_vec(t[c], in[c]);
  for (int l = 0; l < n; ++l) {
    for (int c = 0; c < D; ++c) rows[l * D + c] = t[c][l];
  }
}

// One key/value head: its rows as f32 (kf, vf: tk x D, the tail's and the gradient
// loop's operands; f32 K and V in place, 16-bit ones widened into kbuf and vbuf) and its
// first kLanes keys transposed (kt, vt: D vectors along keys, zero past tk). K and V are
// f32 or, in the forward, 16-bit (kv_type).
template <int D>
struct SmallHead {
  typedef typename Vec<D>::type VD;
  const float *kf = nullptr, *vf = nullptr;
  VT kt[D], vt[D];
  alignas(64) float kbuf[kMaxKeys * D], vbuf[kMaxKeys * D];

  __attribute__((always_inline)) void load(const void* k, const void* v, int64_t tk,
                                           int kv_type) {
    if (kv_type == tfc_kern::kBF32) {
      kf = static_cast<const float*>(k);
      vf = static_cast<const float*>(v);
    } else {
      for (int64_t e = 0; e < tk * D; ++e) {
        kbuf[e] = widen(static_cast<const uint16_t*>(k)[e], kv_type);
        vbuf[e] = widen(static_cast<const uint16_t*>(v)[e], kv_type);
      }
      kf = kbuf;
      vf = vbuf;
    }
    const int lanes = static_cast<int>(tk < kLanes ? tk : kLanes);
    rows_to_lanes<D>(kf, lanes, kt);
    rows_to_lanes<D>(vf, lanes, vt);
  }

  // p = softmax(scale q . k_j) over the keys j < limit (limit >= 1): returns the first
  // kLanes as a vector (zero where masked) and leaves all limit of them in e.
  __attribute__((always_inline)) VT probs(const VD qv, int64_t limit, float scale,
                                          float* e) const {
    MT lane;
    for (int j = 0; j < kLanes; ++j) lane[j] = j;
    VT s = VT{};
    for (int c = 0; c < D; ++c) s += qv[c] * kt[c];
    const MT visible = lane < static_cast<int32_t>(limit);
    s = visible ? s * scale : VT{} - INFINITY;
    float max = lane_max(s);
    for (int64_t j = kLanes; j < limit; ++j) {
      float sj = 0.0f;
      for (int c = 0; c < D; ++c) sj += qv[c] * kf[j * D + c];
      e[j] = sj * scale;
      max = e[j] > max ? e[j] : max;
    }
    std::memcpy(e, &s, sizeof(VT));
    for (int j = 0; j < kLanes; ++j) e[j] = tfc_kern::exp_f32(e[j] - max);
    VT p = load_vec<VT>(e);
    p = visible ? p : VT{};
    float sum = lane_sum(p);
    for (int64_t j = kLanes; j < limit; ++j) sum += (e[j] = tfc_kern::exp_f32(e[j] - max));
    const float inv = 1.0f / sum;
    p *= inv;
    std::memcpy(e, &p, sizeof(VT));
    for (int64_t j = kLanes; j < limit; ++j) e[j] *= inv;
    return p;
  }
};

// exp_f32 on every lane; GCC vectorizes the loop (floor and fma become vector instructions
// on the clones that have them), so the bits are exp_f32's.
__attribute__((always_inline)) inline VT exp_lanes(VT x) {
  alignas(64) float t[kLanes];
  store_vec(t, x);
  for (int l = 0; l < kLanes; ++l) t[l] = tfc_kern::exp_f32(t[l]);
  return load_vec<VT>(t);
}

// The causal limits of rows r0 .. r0 + n - 1 of a part (row r is query r % tq), one a lane
// (0 past n); returns the largest.
__attribute__((always_inline)) inline int64_t lane_limits(int32_t causal, int64_t r0, int n,
                                                          int64_t tq, int64_t offset,
                                                          int64_t tk, MT* lim) {
  int64_t jmax = 0;
  for (int l = 0; l < kLanes; ++l) {
    const int64_t limit = l < n ? causal_limit(causal, (r0 + l) % tq, offset, tk) : 0;
    (*lim)[l] = static_cast<int32_t>(limit);
    jmax = limit > jmax ? limit : jmax;
  }
  return jmax;
}

// Scores of a lane block: s[j] = scale q . k_j for each row's visible keys j < jmax, -inf
// where masked; returns their max per lane (-inf for a row with no visible key).
template <int D>
__attribute__((always_inline)) inline VT lane_scores(const VT* qt, const float* kf, MT lim,
                                                     int64_t jmax, float scale, VT* s) {
  VT max = VT{} - INFINITY;
  for (int64_t j = 0; j < jmax; ++j) {
    VT acc = VT{};
    for (int c = 0; c < D; ++c) acc += qt[c] * kf[j * D + c];
    acc = lim > static_cast<int32_t>(j) ? acc * scale : VT{} - INFINITY;
    s[j] = acc;
    max = acc > max ? acc : max;
  }
  return max;
}

// A lane block's scores from its n rows of Q (at q): the rows' causal limits (lim), s and
// their max per lane, as lane_limits and lane_scores; returns the largest limit.
template <int D>
__attribute__((always_inline)) inline int64_t lane_block_scores(const float* q, int n,
                                                                int32_t causal, int64_t r0,
                                                                int64_t tq, int64_t offset,
                                                                int64_t tk, const float* kf,
                                                                float scale, MT* lim, VT* s,
                                                                VT* max) {
  VT qt[D];
  rows_to_lanes<D>(q, n, qt);
  const int64_t jmax = lane_limits(causal, r0, n, tq, offset, tk, lim);
  *max = lane_scores<D>(qt, kf, *lim, jmax, scale, s);
  return jmax;
}

// Rows of a part in blocks of kLanes, one lane a row (a part's rows, ordered (query head,
// query), lie one after another in Q, dO, the output and dQ): scores, softmax, dP, dS and
// dQ run elementwise across the rows, each K and V element is broadcast once for all of
// them, and no row needs a reduction across lanes (the one-row path's lane trees). Per row
// that is about half the instructions. The last few rows (fewer than kMinLaneRows) take the
// one-row path. Sums over keys and over c keep the one-row path's order; a row's bits
// depend only on its own lane, never on the block, the thread count or the clone.
constexpr int64_t kMinLaneRows = 4;

template <int D>
__attribute__((always_inline)) inline void attention_grad_lanes(
    const AttentionGrad& a, const float* kf, const float* vf, int64_t row0, int64_t r0, int n,
    typename Vec<D>::type* dk, typename Vec<D>::type* dv) {
  typedef typename Vec<D>::type VD;
  VT dot[D], ot[D], dq[D] = {};
  rows_to_lanes<D>(a.dout + row0 * D, n, dot);
  rows_to_lanes<D>(a.o + row0 * D, n, ot);
  MT lim = {};
  VT s[kMaxKeys], max;
  const int64_t jmax = lane_block_scores<D>(a.q + row0 * D, n, a.causal, r0, a.tq, a.offset,
                                            a.tk, kf, a.scale, &lim, s, &max);
  VT sum = VT{};
  for (int64_t j = 0; j < jmax; ++j) sum += (s[j] = exp_lanes(s[j] - max));
  const VT inv = 1.0f / sum;
  VT delta = VT{};
  for (int c = 0; c < D; ++c) delta += dot[c] * ot[c];
  alignas(64) float p[kMaxKeys][kLanes], ds[kMaxKeys][kLanes];
  for (int64_t j = 0; j < jmax; ++j) {
    const MT visible = lim > static_cast<int32_t>(j);
    const VT pj = visible ? s[j] * inv : VT{};
    VT dp = VT{};
    for (int c = 0; c < D; ++c) dp += dot[c] * vf[j * D + c];
    const VT dsj = visible ? pj * (dp - delta) * a.scale : VT{};
    for (int c = 0; c < D; ++c) dq[c] += dsj * kf[j * D + c];
    store_vec(p[j], pj);
    store_vec(ds[j], dsj);
  }
  lanes_to_rows<D>(dq, n, a.dq + row0 * D);
  // dK and dV rows: over the block's rows in order, only the keys a row sees (a masked
  // key's zero p times an infinite dO would be NaN).
  const float* q = a.q + row0 * D;
  const float* dout = a.dout + row0 * D;
  for (int64_t j = 0; j < jmax; ++j) {
    VD dvj = dv[j], dkj = dk[j];
    for (int l = 0; l < n; ++l) {
      if (j >= lim[l]) continue;
      dvj += p[j][l] * load_vec<VD>(dout + l * D);
      dkj += ds[j][l] * load_vec<VD>(q + l * D);
    }
    dv[j] = dvj;
    dk[j] = dkj;
  }
}

template <int D>
__attribute__((always_inline)) inline void attention_grad_small(const AttentionGrad& a,
                                                                int64_t part) {
  typedef typename Vec<D>::type VD;  // a row of Q, K, V or their gradients
  const int64_t group = a.heads / a.kv_heads, tk = a.tk;
  const int64_t kv = part;  // b * kv_heads + hk
  const int64_t rows = group * a.tq;
  const int64_t base = ((part / a.kv_heads) * a.heads + (part % a.kv_heads) * group) * a.tq;
  const float* k = a.k + kv * tk * D;
  const float* v = a.v + kv * tk * D;
  VD dk[kMaxKeys], dv[kMaxKeys];
  for (int j = 0; j < tk; ++j) dk[j] = dv[j] = VD{};
  int64_t r = 0;
  for (; rows - r >= kMinLaneRows; r += kLanes) {
    const int n = static_cast<int>(rows - r < kLanes ? rows - r : kLanes);
    attention_grad_lanes<D>(a, k, v, base + r, r, n, dk, dv);
  }
  SmallHead<D> head;
  if (r < rows) head.load(k, v, tk, tfc_kern::kBF32);
  for (; r < rows; ++r) {
    const int64_t row = base + r, i = r % a.tq;
    float* dqi = a.dq + row * D;
    const int64_t limit = causal_limit(a.causal, i, a.offset, tk);
    if (limit == 0) {
      std::memset(dqi, 0, sizeof(float) * D);
      continue;
    }
    const VD qv = load_vec<VD>(a.q + row * D), dov = load_vec<VD>(a.dout + row * D);
    const VD ov = load_vec<VD>(a.o + row * D);
    alignas(64) float e[kMaxKeys], ds[kMaxKeys];
    const VT p = head.probs(qv, limit, a.scale, e);
    float delta = 0.0f;
    for (int c = 0; c < D; ++c) delta += dov[c] * ov[c];
    VT dp = VT{};
    for (int c = 0; c < D; ++c) dp += dov[c] * head.vt[c];
    const VT dsv = p * (dp - delta) * a.scale;
    std::memcpy(ds, &dsv, sizeof(VT));
    for (int64_t j = kLanes; j < limit; ++j) {
      float dpj = 0.0f;
      for (int c = 0; c < D; ++c) dpj += dov[c] * head.vf[j * D + c];
      ds[j] = e[j] * (dpj - delta) * a.scale;
    }
    VD dq = VD{};
    // Only the visible keys: a masked key's zero p times an infinite dO would be NaN.
    for (int64_t j = 0; j < limit; ++j) {
      dv[j] += e[j] * dov;
      dq += ds[j] * load_vec<VD>(head.kf + j * D);
      dk[j] += ds[j] * qv;
    }
    std::memcpy(dqi, &dq, sizeof dq);
  }
  std::memcpy(a.dk + kv * tk * D, dk, sizeof(float) * tk * D);
  std::memcpy(a.dv + kv * tk * D, dv, sizeof(float) * tk * D);
}

__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
void attention_grad_small_part(void* ctx, int64_t begin, int64_t end) {
  const AttentionGrad& a = *static_cast<const AttentionGrad*>(ctx);
  for (int64_t part = begin; part < end; ++part) {
    if (a.d == 8) attention_grad_small<8>(a, part);
    else attention_grad_small<16>(a, part);
  }
}

// The forward's lane block (see attention_grad_lanes): n <= kLanes consecutive rows of a
// part, one lane a row; kf and vf are the part's K and V rows as f32.
template <int D>
__attribute__((always_inline)) inline void attention_small_lanes(const tfc_kern::AttnArgs& a,
                                                                 const float* kf,
                                                                 const float* vf,
                                                                 int64_t row0, int64_t r0,
                                                                 int n) {
  VT o[D] = {};
  MT lim = {};
  VT s[kMaxKeys], max;
  const int64_t jmax = lane_block_scores<D>(a.q + row0 * D, n, a.causal, r0, a.tq, a.offset,
                                            a.tk, kf, a.scale, &lim, s, &max);
  // A masked key's p is exactly 0 (exp of -inf); a row with no visible key is 0.
  VT sum = VT{};
  for (int64_t j = 0; j < jmax; ++j) {
    const VT p = exp_lanes(s[j] - max);
    sum += p;
    for (int c = 0; c < D; ++c) o[c] += p * vf[j * D + c];
  }
  const MT visible = lim > 0;
  const VT inv = visible ? 1.0f / sum : VT{};
  for (int c = 0; c < D; ++c) o[c] = visible ? o[c] * inv : VT{};
  lanes_to_rows<D>(o, n, a.out + row0 * D);
}

// The forward on the same path, in lane blocks and then one row at a time:
// out_i = sum_j p_j v_j, in order over j.
template <int D>
__attribute__((always_inline)) inline void attention_small(const tfc_kern::AttnArgs& a,
                                                           int64_t part) {
  typedef typename Vec<D>::type VD;
  const int64_t group = a.heads / a.kv_heads, tk = a.tk, rows = group * a.tq;
  const int64_t base = ((part / a.kv_heads) * a.heads + (part % a.kv_heads) * group) * a.tq;
  const size_t esize = tfc_kern::btype_bytes(a.kv_type);
  const char* k = static_cast<const char*>(a.k) + part * tk * D * esize;
  const char* v = static_cast<const char*>(a.v) + part * tk * D * esize;
  // Loaded once, before the first row that needs it (a lambda here would be compiled
  // once, outside the clones: without AVX-512, a fifth of the forward's time).
  SmallHead<D> head;
  bool loaded = false;
  const bool f32 = a.kv_type == tfc_kern::kBF32;
  int64_t r = 0;
  for (; rows - r >= kMinLaneRows; r += kLanes) {
    if (!f32 && !loaded) {
      head.load(k, v, tk, a.kv_type);
      loaded = true;
    }
    const int n = static_cast<int>(rows - r < kLanes ? rows - r : kLanes);
    attention_small_lanes<D>(a, f32 ? reinterpret_cast<const float*>(k) : head.kf,
                             f32 ? reinterpret_cast<const float*>(v) : head.vf, base + r, r, n);
  }
  for (; r < rows; ++r) {
    if (!loaded) {
      head.load(k, v, tk, a.kv_type);
      loaded = true;
    }
    const int64_t row = base + r;
    const int64_t limit = causal_limit(a.causal, r % a.tq, a.offset, tk);
    VD o = VD{};
    if (limit > 0) {
      alignas(64) float e[kMaxKeys];
      head.probs(load_vec<VD>(a.q + row * D), limit, a.scale, e);
      // Two chains (even and odd keys), halving the dependent adds of a row.
      VD o1 = VD{};
      int64_t j = 0;
      for (; j + 1 < limit; j += 2) {
        o += e[j] * load_vec<VD>(head.vf + j * D);
        o1 += e[j + 1] * load_vec<VD>(head.vf + (j + 1) * D);
      }
      if (j < limit) o += e[j] * load_vec<VD>(head.vf + j * D);
      o += o1;
    }
    std::memcpy(a.out + row * D, &o, sizeof o);
  }
}

__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
void attention_small_part(void* ctx, int64_t begin, int64_t end) {
  const tfc_kern::AttnArgs& a = *static_cast<const tfc_kern::AttnArgs*>(ctx);
  for (int64_t part = begin; part < end; ++part) {
    if (a.d == 8) attention_small<8>(a, part);
    else attention_small<16>(a, part);
  }
}

}  // namespace

extern "C" void tfc_k_attention_grad_f32(const float* q, const float* k, const float* v,
                                         const float* out, const float* grad_out, float* dq,
                                         float* dk, float* dv, int64_t batch, int64_t heads,
                                         int64_t kv_heads, int64_t tq, int64_t tk, int64_t d,
                                         int64_t dv_dim, int32_t causal, int64_t offset,
                                         float scale) {
  AttentionGrad a{q,     k,        v,  out, grad_out, dq,     dk,     dv,     heads,
                  kv_heads, tq,    tk, d,   dv_dim,   causal, offset, scale};
  const bool small = small_shape(d, dv_dim, tk);
  tfc_kern::parallel_for(batch * kv_heads, 1,
                         small ? attention_grad_small_part : attention_grad_part, &a);
}

namespace tfc_kern {

bool attention_small(const AttnArgs& a) {
  if (!small_shape(a.d, a.dv, a.tk)) return false;
  parallel_for(a.batch * a.kv_heads, 1, attention_small_part, const_cast<AttnArgs*>(&a));
  return true;
}

}  // namespace tfc_kern
