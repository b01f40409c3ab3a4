// Token sampling: greedy, temperature, top-k, top-p, one draw per row from a
// counter-based generator keyed by (seed, row).
//
// Per row (V = vocab):
//   - max and (when needed) exp((x - max)/T) over the row use the ISA's vector kernels;
//   - top-k: nth_element over indices, then a sort of the k kept only;
//   - top-p without top-k: the candidates are the c largest (c = 64, 256, ...) until
//     their mass reaches top_p of the total, so only a small prefix is ever sorted;
//   - the order among candidates is (logit descending, index ascending): a strict total
//     order, so ties are broken the same way on every run.
// The draw u in [0,1) (53 bits) selects the first kept token whose cumulative weight
// exceeds u * (kept mass), in the candidates' order (in index order when all V are kept).
#include <math.h>
#include <stdio.h>

#include <algorithm>
#include <vector>

#include "internal.h"
#include "random.h"
#include "tfc_kernels.h"

namespace tfc_kern {
namespace {

struct SampleArgs {
  const float* logits;
  int64_t vocab;
  float temperature;
  int32_t top_k;
  float top_p;
  int64_t seed;
  int32_t* out;
};

thread_local std::vector<int32_t> tls_idx;
thread_local std::vector<double> tls_w;

int32_t argmax_first(const float* x, int64_t n) {
  const float m = isa().max(x, n);
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] == m) return (int32_t)i;
  }
  return 0;
}

int32_t sample_row(const SampleArgs& s, int64_t b) {
  const int64_t V = s.vocab;
  const float* x = s.logits + b * V;
  bool nan = false;
  for (int64_t i = 0; i < V; ++i) nan |= (x[i] != x[i]);
  if (nan) {
    char msg[160];
    snprintf(msg, sizeof msg, "tfc_k_sample_f32: logits of row %lld contain NaN", (long long)b);
    tfc_kernels_error(msg);
    return 0;
  }
  if (!(s.temperature > 0.f)) return argmax_first(x, V);
  const float xmax = isa().max(x, V);
  if (xmax == __builtin_inff() || xmax == -__builtin_inff()) return argmax_first(x, V);
  const float inv_t = 1.f / s.temperature;
  const double u = uniform_double(s.seed, b, kSampleStream);
  const int64_t k = (s.top_k <= 0 || s.top_k >= V) ? V : s.top_k;
  const bool use_p = s.top_p < 1.f;

  if (k == V && !use_p) {
    float* w = scratch(5, (size_t)V);
    if (!w) return 0;
    const double total = isa().exp_sum(x, V, xmax, inv_t, w);
    const double target = u * total;
    double cum = 0.0;
    int64_t last = 0;
    for (int64_t i = 0; i < V; ++i) {
      if (w[i] > 0.f) {
        cum += (double)w[i];
        last = i;
        if (cum > target) return (int32_t)i;
      }
    }
    return (int32_t)last;  // rounding: the last token of nonzero weight
  }

  auto better = [x](int32_t a, int32_t c) { return x[a] > x[c] || (x[a] == x[c] && a < c); };
  std::vector<int32_t>& idx = tls_idx;
  std::vector<double>& wk = tls_w;
  idx.resize((size_t)V);
  for (int64_t i = 0; i < V; ++i) idx[(size_t)i] = (int32_t)i;

  int64_t kept = k;     // candidates idx[0..kept), sorted by `better`
  double mass = 0.0;    // their total weight (the renormalization of top-k)
  if (k < V) {
    std::nth_element(idx.begin(), idx.begin() + k, idx.end(), better);
    std::sort(idx.begin(), idx.begin() + k, better);
    wk.resize((size_t)k);
    for (int64_t i = 0; i < k; ++i) {
      wk[(size_t)i] = exp(((double)x[idx[(size_t)i]] - (double)xmax) * (double)inv_t);
      mass += wk[(size_t)i];
    }
  } else {
    // top-p over the whole vocabulary: total mass from the vector kernel, then the
    // smallest set of largest candidates that holds the prefix.
    float* w = scratch(5, (size_t)V);
    if (!w) return 0;
    mass = isa().exp_sum(x, V, xmax, inv_t, w);
    int64_t c = std::min<int64_t>(V, 64);
    for (;;) {
      std::nth_element(idx.begin(), idx.begin() + (c - 1), idx.end(), better);
      std::sort(idx.begin(), idx.begin() + c, better);
      double cm = 0.0;
      for (int64_t i = 0; i < c; ++i) cm += (double)w[idx[(size_t)i]];
      if (c == V || cm >= (double)s.top_p * mass) break;
      c = std::min<int64_t>(V, c * 4);
    }
    kept = c;
    wk.resize((size_t)c);
    for (int64_t i = 0; i < c; ++i) wk[(size_t)i] = (double)w[idx[(size_t)i]];
  }
  if (use_p) {
    // smallest prefix whose mass reaches top_p (at least one token)
    const double need = (double)s.top_p * mass;
    double cum = 0.0;
    int64_t n = 0;
    while (n < kept) {
      cum += wk[(size_t)n];
      ++n;
      if (cum >= need) break;
    }
    kept = n;
    mass = cum;
  }
  const double target = u * mass;
  double cum = 0.0;
  for (int64_t i = 0; i < kept; ++i) {
    cum += wk[(size_t)i];
    if (cum > target) return idx[(size_t)i];
  }
  return idx[(size_t)(kept - 1)];
}

void sample_rows(void* ctx, int64_t begin, int64_t end) {
  const SampleArgs& s = *static_cast<const SampleArgs*>(ctx);
  for (int64_t b = begin; b < end; ++b) s.out[b] = sample_row(s, b);
}

}  // namespace
}  // namespace tfc_kern

extern "C" void tfc_k_sample_f32(const float* logits, int64_t batch, int64_t vocab,
                                 float temperature, int32_t top_k, float top_p, int64_t seed,
                                 int32_t* out_ids) {
  if (batch <= 0) return;
  if (vocab <= 0 || vocab > INT32_MAX) {
    tfc_kernels_error("tfc_k_sample_f32: vocabulary size out of range");
    return;
  }
  tfc_kern::SampleArgs s{logits, vocab, temperature, top_k, top_p, seed, out_ids};
  tfc_kern::parallel_for(batch, 1, tfc_kern::sample_rows, &s);
}
