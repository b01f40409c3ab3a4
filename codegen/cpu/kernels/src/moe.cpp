// Mixture of experts (Mixtral's sparse MoE block): top-k routing and dropless SwiGLU
// experts that compute only the (token, expert) pairs routing made.
//
// The expert kernels sort the N * k pairs by expert (a counting sort, stable in token
// order), gather each expert's rows into a contiguous block, and run the expert's three
// products on that block with the library's GEMMs (tfc_k_linear_ex_f32 /
// tfc_k_matmul_f32, multi-threaded inside). An expert no token chose costs nothing; the
// work is N * k * 6 * D * F whatever the number of experts. Results are scattered back
// expert by expert in ascending expert order (as Hugging Face's MixtralExperts loop),
// serially, so the sums do not depend on the thread count.
#include <math.h>
#include <stdio.h>

#include <vector>

#include "tfc_kernels.h"

namespace {

float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

// The (token, slot) pairs of each of the |experts| experts held here, the ids first ...
// first + experts - 1 of |total| (expert parallelism: each rank holds E / N of them): pairs
// of local expert e are order[begin[e]..begin[e+1]), each the flat index token * k + slot.
// A pair of another rank's expert is skipped; an id out of [0, total) is reported (and
// false returned).
bool group_by_expert(const int32_t* ids, int64_t n, int64_t k, int64_t experts, int64_t total,
                     int64_t first, const char* who, std::vector<int64_t>& begin,
                     std::vector<int64_t>& order) {
  begin.assign(experts + 1, 0);
  auto local = [&](int32_t e) { return e >= first && e < first + experts; };
  for (int64_t p = 0; p < n * k; ++p) {
    const int32_t e = ids[p];
    if (e < 0 || e >= total) {
      char msg[160];
      snprintf(msg, sizeof msg, "%s: expert id %d of token %lld is out of range [0, %lld)",
               who, e, (long long)(p / k), (long long)total);
      tfc_kernels_error(msg);
      return false;
    }
    if (local(e)) ++begin[e - first + 1];
  }
  for (int64_t e = 0; e < experts; ++e) begin[e + 1] += begin[e];
  order.resize(begin[experts]);
  std::vector<int64_t> next(begin.begin(), begin.end() - 1);
  for (int64_t p = 0; p < n * k; ++p) {
    if (local(ids[p])) order[next[ids[p] - first]++] = p;
  }
  return true;
}

}  // namespace

extern "C" {

void tfc_k_moe_route_f32(const float* logits, int64_t n, int64_t experts, int64_t k,
                         int32_t* ids) {
  if (k < 1 || k > experts) {
    tfc_kernels_error("tfc_k_moe_route_f32: top_k out of [1, E]");
    return;
  }
  std::vector<float> p(experts);
  std::vector<char> taken(experts);
  for (int64_t t = 0; t < n; ++t) {
    const float* x = logits + t * experts;
    // Softmax in f32 as torch computes it (max-shifted exp, one sum, one division per
    // element): the selection compares probabilities, so logits that differ by less
    // than the probabilities' rounding tie, as they do in Hugging Face's router.
    float m = x[0];
    for (int64_t e = 1; e < experts; ++e) m = x[e] > m ? x[e] : m;
    float sum = 0.f;
    for (int64_t e = 0; e < experts; ++e) {
      p[e] = expf(x[e] - m);
      sum += p[e];
    }
    for (int64_t e = 0; e < experts; ++e) {
      p[e] /= sum;
      taken[e] = 0;
    }
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      for (int64_t e = 0; e < experts; ++e) {
        // NaN probabilities are never chosen over a number; the lower index wins ties.
        if (taken[e]) continue;
        if (best < 0 || p[e] > p[best] || (p[best] != p[best] && p[e] == p[e])) best = e;
      }
      taken[best] = 1;
      ids[t * k + j] = (int32_t)best;
    }
  }
}

void tfc_k_moe_ffn_f32(const float* x, const int32_t* ids, const float* weights,
                       const float* const* experts, float* y, int64_t n, int64_t d, int64_t f,
                       int64_t num_experts, int64_t k, int64_t total_experts,
                       int64_t first_expert) {
  std::vector<int64_t> begin, order;
  if (!group_by_expert(ids, n, k, num_experts, total_experts, first_expert, "tfc_k_moe_ffn_f32",
                       begin, order))
    return;
  for (int64_t i = 0; i < n * d; ++i) y[i] = 0.f;
  std::vector<float> xe, h1, h3, out;
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t rows = begin[e + 1] - begin[e];
    if (rows == 0) continue;
    const int64_t* pairs = order.data() + begin[e];
    xe.resize(rows * d);
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = x + (pairs[r] / k) * d;
      for (int64_t i = 0; i < d; ++i) xe[r * d + i] = src[i];
    }
    h1.resize(rows * f);
    h3.resize(rows * f);
    out.resize(rows * d);
    const float* w1 = experts[3 * e];
    const float* w3 = experts[3 * e + 1];
    const float* w2 = experts[3 * e + 2];
    // silu(x w1^T) with the activation in the GEMM's epilogue, then * (x w3^T).
    tfc_k_linear_ex_f32(xe.data(), w1, nullptr, nullptr, h1.data(), rows, f, d, 1, 3, 0.f);
    tfc_k_linear_ex_f32(xe.data(), w3, nullptr, nullptr, h3.data(), rows, f, d, 1, 0, 0.f);
    for (int64_t i = 0; i < rows * f; ++i) h1[i] *= h3[i];
    tfc_k_linear_ex_f32(h1.data(), w2, nullptr, nullptr, out.data(), rows, d, f, 1, 0, 0.f);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t token = pairs[r] / k;
      const float w = weights[token * total_experts + first_expert + e];
      float* dst = y + token * d;
      for (int64_t i = 0; i < d; ++i) dst[i] += w * out[r * d + i];
    }
  }
}

void tfc_k_moe_ffn_grad_f32(const float* x, const int32_t* ids, const float* weights,
                            const float* dy, const float* const* experts, float* dx,
                            float* dweights, float* const* dexperts, int64_t n, int64_t d,
                            int64_t f, int64_t num_experts, int64_t k, int64_t total_experts,
                            int64_t first_expert) {
  std::vector<int64_t> begin, order;
  if (!group_by_expert(ids, n, k, num_experts, total_experts, first_expert,
                       "tfc_k_moe_ffn_grad_f32", begin, order))
    return;
  for (int64_t i = 0; i < n * d; ++i) dx[i] = 0.f;
  for (int64_t i = 0; i < n * total_experts; ++i) dweights[i] = 0.f;
  std::vector<float> xe, g, h1, h3, a, out, da, dxe;
  for (int64_t e = 0; e < num_experts; ++e) {
    float* dw1 = dexperts[3 * e];
    float* dw3 = dexperts[3 * e + 1];
    float* dw2 = dexperts[3 * e + 2];
    const int64_t rows = begin[e + 1] - begin[e];
    if (rows == 0) {
      for (int64_t i = 0; i < f * d; ++i) dw1[i] = dw3[i] = dw2[i] = 0.f;
      continue;
    }
    const int64_t* pairs = order.data() + begin[e];
    const float* w1 = experts[3 * e];
    const float* w3 = experts[3 * e + 1];
    const float* w2 = experts[3 * e + 2];
    xe.resize(rows * d);
    g.resize(rows * d);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t token = pairs[r] / k;
      for (int64_t i = 0; i < d; ++i) xe[r * d + i] = x[token * d + i];
    }
    // Recompute the expert's activations on its rows.
    h1.resize(rows * f);
    h3.resize(rows * f);
    a.resize(rows * f);
    out.resize(rows * d);
    tfc_k_linear_ex_f32(xe.data(), w1, nullptr, nullptr, h1.data(), rows, f, d, 1, 0, 0.f);
    tfc_k_linear_ex_f32(xe.data(), w3, nullptr, nullptr, h3.data(), rows, f, d, 1, 0, 0.f);
    for (int64_t i = 0; i < rows * f; ++i) a[i] = h1[i] * sigmoid(h1[i]) * h3[i];
    tfc_k_linear_ex_f32(a.data(), w2, nullptr, nullptr, out.data(), rows, d, f, 1, 0, 0.f);
    // d weights[token, e] = dy[token] . out; d out = weights[token, e] * dy[token].
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t token = pairs[r] / k;
      const float w = weights[token * total_experts + first_expert + e];
      const float* dyr = dy + token * d;
      float dot = 0.f;
      for (int64_t i = 0; i < d; ++i) {
        dot += dyr[i] * out[r * d + i];
        g[r * d + i] = w * dyr[i];
      }
      dweights[token * total_experts + first_expert + e] += dot;
    }
    // dw2 [D, F] = g^T a; da [rows, F] = g w2.
    tfc_k_matmul_f32(g.data(), a.data(), dw2, 1, d, f, rows, 1, 0, 0, 0, 0, 0);
    da.resize(rows * f);
    tfc_k_matmul_f32(g.data(), w2, da.data(), 1, rows, f, d, 0, 0, 0, 0, 0, 0);
    // da -> dh3 = da * silu(h1) (into h3's place after use), dh1 = da * h3 * silu'(h1).
    for (int64_t i = 0; i < rows * f; ++i) {
      const float s = sigmoid(h1[i]);
      const float dh1 = da[i] * h3[i] * s * (1.f + h1[i] * (1.f - s));
      h3[i] = da[i] * h1[i] * s;
      h1[i] = dh1;
    }
    // dw1 = dh1^T xe, dw3 = dh3^T xe ([F, D]); dxe = dh1 w1 + dh3 w3.
    tfc_k_matmul_f32(h1.data(), xe.data(), dw1, 1, f, d, rows, 1, 0, 0, 0, 0, 0);
    tfc_k_matmul_f32(h3.data(), xe.data(), dw3, 1, f, d, rows, 1, 0, 0, 0, 0, 0);
    dxe.resize(rows * d);
    tfc_k_matmul_f32(h1.data(), w1, dxe.data(), 1, rows, d, f, 0, 0, 0, 0, 0, 0);
    tfc_k_matmul_f32(h3.data(), w3, dxe.data(), 1, rows, d, f, 0, 0, 0, 0, 0, 1);
    for (int64_t r = 0; r < rows; ++r) {
      float* dst = dx + (pairs[r] / k) * d;
      for (int64_t i = 0; i < d; ++i) dst[i] += dxe[r * d + i];
    }
  }
}

}  // extern "C"
