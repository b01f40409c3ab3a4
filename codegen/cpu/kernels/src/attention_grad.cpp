// Attention backward: tfc_k_attention_grad_f32.
//
// FlashAttention's backward in its simplest exact form: for every query row the
// probabilities are recomputed from Q and K (never read from a saved T x T
// matrix), and with delta = do . o (= sum_j p_j dp_j):
//   dv_j += p_j do,  dp_j = do . v_j,  ds_j = p_j (dp_j - delta),
//   dq   += scale ds_j k_j,  dk_j += scale ds_j q.
// Work is split by (batch, key/value head): each part owns the dK and dV rows of
// its head and the dQ rows of the query heads that share it, so no two threads
// ever write the same element and the sums run in one fixed order.
#include "internal.h"
#include "tfc_kernels.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace {

struct AttentionGrad {
  const float *q, *k, *v, *o, *dout;
  float *dq, *dk, *dv;
  int64_t heads, kv_heads, tq, tk, d, dv_dim;
  int32_t causal;
  int64_t offset;
  float scale;
};

void attention_grad_part(void* ctx, int64_t begin, int64_t end) {
  const AttentionGrad& a = *static_cast<const AttentionGrad*>(ctx);
  const int64_t group = a.heads / a.kv_heads;
  std::vector<float> p(static_cast<size_t>(a.tk));
  for (int64_t part = begin; part < end; ++part) {
    const int64_t b = part / a.kv_heads, hk = part % a.kv_heads;
    const float* kh = a.k + (b * a.kv_heads + hk) * a.tk * a.d;
    const float* vh = a.v + (b * a.kv_heads + hk) * a.tk * a.dv_dim;
    float* dkh = a.dk + (b * a.kv_heads + hk) * a.tk * a.d;
    float* dvh = a.dv + (b * a.kv_heads + hk) * a.tk * a.dv_dim;
    std::memset(dkh, 0, sizeof(float) * a.tk * a.d);
    std::memset(dvh, 0, sizeof(float) * a.tk * a.dv_dim);
    for (int64_t g = 0; g < group; ++g) {
      const int64_t h = hk * group + g;
      for (int64_t i = 0; i < a.tq; ++i) {
        const int64_t row = (b * a.heads + h) * a.tq + i;
        const float* qi = a.q + row * a.d;
        const float* oi = a.o + row * a.dv_dim;
        const float* doi = a.dout + row * a.dv_dim;
        float* dqi = a.dq + row * a.d;
        std::memset(dqi, 0, sizeof(float) * a.d);
        int64_t limit = a.tk;
        if (a.causal) {
          int64_t last = i + a.offset + 1;
          limit = last < 0 ? 0 : (last < a.tk ? last : a.tk);
        }
        if (limit == 0) continue;
        float max = -INFINITY;
        for (int64_t j = 0; j < limit; ++j) {
          const float* kj = kh + j * a.d;
          float s = 0.0f;
          for (int64_t c = 0; c < a.d; ++c) s += qi[c] * kj[c];
          p[j] = s * a.scale;
          max = p[j] > max ? p[j] : max;
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < limit; ++j) {
          p[j] = std::exp(p[j] - max);
          sum += p[j];
        }
        const float inv = 1.0f / sum;
        float delta = 0.0f;
        for (int64_t c = 0; c < a.dv_dim; ++c) delta += doi[c] * oi[c];
        for (int64_t j = 0; j < limit; ++j) {
          const float pj = p[j] * inv;
          const float* vj = vh + j * a.dv_dim;
          float* dvj = dvh + j * a.dv_dim;
          float dp = 0.0f;
          for (int64_t c = 0; c < a.dv_dim; ++c) {
            dp += doi[c] * vj[c];
            dvj[c] += pj * doi[c];
          }
          const float ds = pj * (dp - delta) * a.scale;
          const float* kj = kh + j * a.d;
          float* dkj = dkh + j * a.d;
          for (int64_t c = 0; c < a.d; ++c) {
            dqi[c] += ds * kj[c];
            dkj[c] += ds * qi[c];
          }
        }
      }
    }
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
  tfc_kern::parallel_for(batch * kv_heads, 1, attention_grad_part, &a);
}
