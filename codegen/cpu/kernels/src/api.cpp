// The C entry points for matrix products and attention: argument checks, ISA dispatch.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "internal.h"
#include "tfc_kernels.h"

namespace tfc_kern {
namespace {

std::atomic<const IsaKernels*> g_isa{nullptr};

bool cpu_has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // (F16C: the f16 weights' conversion; every AVX2 CPU has it.)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

const IsaKernels* by_name(const char* name) {
  if (!name) return nullptr;
  if (strcmp(name, "avx512") == 0) return cpu_has_avx512() ? &kIsaAvx512 : nullptr;
  if (strcmp(name, "avx2") == 0) return cpu_has_avx2() ? &kIsaAvx2 : nullptr;
  if (strcmp(name, "scalar") == 0) return &kIsaScalar;
  return nullptr;
}

const IsaKernels* detect() {
  // TFC_KERNELS_ISA=avx512|avx2|scalar caps the choice (for testing and comparisons);
  // a value the CPU cannot run is ignored.
  if (const IsaKernels* forced = by_name(getenv("TFC_KERNELS_ISA"))) return forced;
  if (cpu_has_avx512()) return &kIsaAvx512;
  if (cpu_has_avx2()) return &kIsaAvx2;
  return &kIsaScalar;
}

// The epilogue's activations (see kernels_impl.inc), in scalar form for k == 0.
float activate(float x, const GemmArgs& g) {
  switch (g.act) {
    case 1: return x / (1.f + expf(-1.5957691216057308f * x * (1.f + 0.044715f * x * x)));
    case 2: return x < 0.f ? 0.f : x;  // NaN stays NaN
    case 3: return x / (1.f + expf(-x));
    case 4: return x > 0.f ? x : x * g.act_alpha;  // NaN stays NaN
    default: return x;
  }
}

void fill_k0(const GemmArgs& g) {
  // k == 0: op(A) op(B) is the zero matrix.
  for (int64_t b = 0; b < g.batch; ++b) {
    float* c = g.c + b * g.stride_c;
    const bool last = g.stride_c != 0 || b == g.batch - 1;
    const float* r = g.residual && last ? g.residual + b * g.stride_c : nullptr;
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        float x = g.bias ? g.bias[j] : 0.f;
        x = (g.accumulate || (g.stride_c == 0 && b > 0)) ? c[i * g.n + j] + x : x;
        if (last) x = activate(x, g);
        if (r) x += r[i * g.n + j];
        c[i * g.n + j] = x;
      }
    }
  }
}

void run_gemm(GemmArgs g) {
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0) return;
  if (!g.a && g.k > 0) return;
  if (g.residual && g.residual == g.c && g.act == 0) {
    // In place without an activation: C += op(A) op(B) + bias.
    g.residual = nullptr;
    g.accumulate = true;
  }
  if (g.k <= 0) {
    fill_k0(g);
    return;
  }
  if (g.stride_c == 0 && g.batch > 1) {
    // One output for the whole batch: the products are summed into it, batch by batch
    // in order (deterministic), C = sum_b op(A_b) op(B_b) (+ C when accumulate).
    GemmArgs one = g;
    one.batch = 1;
    for (int64_t b = 0; b < g.batch; ++b) {
      one.a = g.a + b * g.stride_a;
      one.b = static_cast<const char*>(g.b) + b_matrix(g, b) * g.stride_b * btype_bytes(g.b_type);
      one.accumulate = g.accumulate || b > 0;
      one.bias = b == 0 ? g.bias : nullptr;
      one.residual = b == g.batch - 1 ? g.residual : nullptr;  // epilogue on the total
      one.act = b == g.batch - 1 ? g.act : 0;
      isa().gemm(one);
    }
    return;
  }
  isa().gemm(g);
}

}  // namespace

const IsaKernels& isa() {
  const IsaKernels* p = g_isa.load(std::memory_order_acquire);
  if (!p) {
    p = detect();
    g_isa.store(p, std::memory_order_release);
  }
  return *p;
}

}  // namespace tfc_kern

extern "C" {

int tfc_kernels_internal_set_isa(const char* name) {
  if (!name) {
    tfc_kern::g_isa.store(tfc_kern::detect());
    return 1;
  }
  const tfc_kern::IsaKernels* p = tfc_kern::by_name(name);
  if (!p) return 0;
  tfc_kern::g_isa.store(p);
  return 1;
}

const char* tfc_kernels_internal_isa_name(void) { return tfc_kern::isa().name; }

void tfc_k_matmul_bx_f32(const float* a, const void* b, int32_t b_type, float* c,
                         int64_t batch, int64_t m, int64_t n, int64_t k, int32_t trans_a,
                         int32_t trans_b, int64_t stride_a, int64_t stride_b,
                         int64_t period_b, int64_t stride_c, int32_t accumulate) {
  if (m < 0 || n < 0 || k < 0 || batch < 0 || period_b < 0) {
    tfc_kernels_error("tfc_k_matmul_f32: negative size");
    return;
  }
  if (b_type < TFC_K_F32 || b_type > TFC_K_F16) {
    tfc_kernels_error("tfc_k_matmul_bx_f32: unknown element type of B");
    return;
  }
  tfc_kern::GemmArgs g{a,       b,        c,        nullptr,  batch,   m,
                       n,       k,        trans_a != 0, trans_b != 0, stride_a, stride_b,
                       stride_c, accumulate != 0};
  g.b_type = b_type;
  g.b_period = period_b;
  tfc_kern::run_gemm(g);
}

void tfc_k_matmul_f32(const float* a, const float* b, float* c, int64_t batch, int64_t m,
                      int64_t n, int64_t k, int32_t trans_a, int32_t trans_b,
                      int64_t stride_a, int64_t stride_b, int64_t stride_c,
                      int32_t accumulate) {
  tfc_k_matmul_bx_f32(a, b, TFC_K_F32, c, batch, m, n, k, trans_a, trans_b, stride_a, stride_b,
                      0, stride_c, accumulate);
}

void tfc_k_linear_f32(const float* x, const float* w, const float* bias, float* y, int64_t m,
                      int64_t n, int64_t k, int32_t trans_w) {
  if (m < 0 || n < 0 || k < 0) {
    tfc_kernels_error("tfc_k_linear_f32: negative size");
    return;
  }
  tfc_k_linear_ex_f32(x, w, bias, nullptr, y, m, n, k, trans_w, 0, 0.f);
}

void tfc_k_linear_ex_bx_f32(const float* x, const void* w, int32_t w_type, const float* bias,
                            const float* residual, float* y, int64_t m, int64_t n, int64_t k,
                            int32_t trans_w, int32_t activation, float act_param) {
  if (m < 0 || n < 0 || k < 0) {
    tfc_kernels_error("tfc_k_linear_ex_f32: negative size");
    return;
  }
  if (activation < 0 || activation > 4) {
    tfc_kernels_error("tfc_k_linear_ex_f32: unknown activation");
    return;
  }
  if (w_type < TFC_K_F32 || w_type > TFC_K_F16) {
    tfc_kernels_error("tfc_k_linear_ex_bx_f32: unknown element type of the weight");
    return;
  }
  tfc_kern::GemmArgs g{x, w, y, bias, 1, m, n, k, false, trans_w != 0, 0, 0, 0, false};
  g.residual = residual;
  g.act = activation;
  g.act_alpha = act_param;
  g.b_type = w_type;
  tfc_kern::run_gemm(g);
}

void tfc_k_linear_ex_f32(const float* x, const float* w, const float* bias,
                         const float* residual, float* y, int64_t m, int64_t n, int64_t k,
                         int32_t trans_w, int32_t activation, float act_param) {
  tfc_k_linear_ex_bx_f32(x, w, TFC_K_F32, bias, residual, y, m, n, k, trans_w, activation,
                         act_param);
}

void tfc_k_attention_kvx_f32(const float* q, const void* k, const void* v, int32_t kv_type,
                             float* out, int64_t batch, int64_t heads, int64_t kv_heads,
                             int64_t tq, int64_t tk, int64_t d, int64_t dv, int32_t causal,
                             int64_t offset, float scale) {
  if (batch < 0 || heads < 0 || kv_heads <= 0 || tq < 0 || tk < 0 || d <= 0 || dv < 0 ||
      heads % kv_heads != 0) {
    tfc_kernels_error("tfc_k_attention_f32: bad sizes (heads must be a multiple of kv_heads)");
    return;
  }
  if (kv_type < TFC_K_F32 || kv_type > TFC_K_F16) {
    tfc_kernels_error("tfc_k_attention_kvx_f32: unknown element type of K and V");
    return;
  }
  tfc_kern::AttnArgs a{q, k, v, out, batch, heads, kv_heads, tq, tk, d, dv, causal != 0, offset,
                       scale};
  a.kv_type = kv_type;
  if (tfc_kern::attention_small(a)) return;
  tfc_kern::isa().attention(a);
}

void tfc_k_attention_f32(const float* q, const float* k, const float* v, float* out,
                         int64_t batch, int64_t heads, int64_t kv_heads, int64_t tq,
                         int64_t tk, int64_t d, int64_t dv, int32_t causal, int64_t offset,
                         float scale) {
  tfc_k_attention_kvx_f32(q, k, v, TFC_K_F32, out, batch, heads, kv_heads, tq, tk, d, dv, causal,
                          offset, scale);
}

void tfc_k_attention_rows_f32(const float* q, const void* k, const void* v, int32_t kv_type,
                              float* out, int64_t batch, int64_t heads, int64_t kv_heads,
                              int64_t tq, int64_t tk, int64_t d, int64_t dv,
                              const int32_t* row_offsets, float scale) {
  if (batch < 0 || row_offsets == nullptr || kv_type < TFC_K_F32 || kv_type > TFC_K_F16) {
    tfc_kernels_error("tfc_k_attention_rows_f32: bad sizes, offsets or element type");
    return;
  }
  // Row by row: each row is its own causal problem, and a row's result must not depend on
  // the others (a request's tokens are the same alone or among others).
  const int64_t kvBytes = kv_type == TFC_K_F32 ? 4 : 2;
  for (int64_t b = 0; b < batch; ++b) {
    tfc_k_attention_kvx_f32(q + b * heads * tq * d,
                            static_cast<const char*>(k) + b * kv_heads * tk * d * kvBytes,
                            static_cast<const char*>(v) + b * kv_heads * tk * dv * kvBytes,
                            kv_type, out + b * heads * tq * dv, 1, heads, kv_heads, tq, tk, d,
                            dv, 1, row_offsets[b], scale);
  }
}

void tfc_k_attention_paged_f32(const float* q, const void* k, const void* v, int32_t kv_type,
                               float* out, int64_t batch, int64_t heads, int64_t kv_heads,
                               int64_t tq, int64_t d, int64_t dv, int64_t pool_blocks,
                               int64_t block_size, const int32_t* blocks,
                               int64_t max_blocks, const int32_t* positions, float scale) {
  if (batch < 0 || heads <= 0 || kv_heads <= 0 || heads % kv_heads != 0 || tq < 0 || d <= 0 ||
      dv <= 0 || pool_blocks < 0 || block_size <= 0 || max_blocks <= 0 || !blocks ||
      !positions || kv_type < TFC_K_F32 || kv_type > TFC_K_F16) {
    tfc_kernels_error("tfc_k_attention_paged_f32: bad sizes, tables or element type");
    return;
  }
  // Each row reads its table up to the first entry < 0, as far as its last query sees.
  static thread_local std::vector<int64_t> rowKeys;
  rowKeys.assign(static_cast<size_t>(batch), 0);
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t* table = blocks + b * max_blocks;
    const int64_t visible = std::min<int64_t>(positions[b] + tq, max_blocks * block_size);
    int64_t n = 0;
    for (; n * block_size < visible && table[n] >= 0; ++n) {
      if (table[n] >= pool_blocks) {
        tfc_kernels_error("paged attention: a block table entry a row reads is outside "
                          "the pool");
        return;
      }
    }
    rowKeys[static_cast<size_t>(b)] = std::max<int64_t>(0, std::min(visible, n * block_size));
  }
  if (tq == 1) {
    // Decode: every row at once, its keys read in place block by block.
    tfc_kern::AttnArgs a{q,  k, v, out, batch, heads, kv_heads, 1, max_blocks * block_size,
                         d, dv, true, 0, scale};
    a.kv_type = kv_type;
    a.blocks = blocks;
    a.block_size = block_size;
    a.max_blocks = max_blocks;
    a.row_keys = rowKeys.data();
    tfc_kern::isa().attention(a);
    return;
  }
  const int64_t kvBytes = kv_type == TFC_K_F32 ? 4 : 2;
  const int64_t kRow = block_size * d * kvBytes, vRow = block_size * dv * kvBytes;
  // A prefill chunk: each row's visible keys are gathered in order (a block's slots are
  // contiguous per head), then attended as one contiguous row: the unpaged arithmetic.
  static thread_local std::vector<char> kbuf, vbuf;
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t* table = blocks + b * max_blocks;
    float* outRow = out + b * heads * tq * dv;
    // (A prefill chunk's padding queries may reach past the row's blocks; their results
    // are not used.)
    const int64_t nblocks = (rowKeys[static_cast<size_t>(b)] + block_size - 1) / block_size;
    if (nblocks == 0) {
      std::fill(outRow, outRow + heads * tq * dv, 0.f);
      continue;
    }
    kbuf.resize(static_cast<size_t>(kv_heads * nblocks * kRow));
    vbuf.resize(static_cast<size_t>(kv_heads * nblocks * vRow));
    for (int64_t i = 0; i < nblocks; ++i) {
      const int64_t id = table[i];
      for (int64_t h = 0; h < kv_heads; ++h) {
        memcpy(kbuf.data() + (h * nblocks + i) * kRow,
               static_cast<const char*>(k) + (id * kv_heads + h) * kRow, kRow);
        memcpy(vbuf.data() + (h * nblocks + i) * vRow,
               static_cast<const char*>(v) + (id * kv_heads + h) * vRow, vRow);
      }
    }
    tfc_k_attention_kvx_f32(q + b * heads * tq * d, kbuf.data(), vbuf.data(), kv_type, outRow,
                            1, heads, kv_heads, tq, nblocks * block_size, d, dv, 1, positions[b],
                            scale);
  }
}

void tfc_k_paged_kv_write(void* pool, const void* update, int64_t elem_bytes, int64_t batch,
                          int64_t kv_heads, int64_t len, int64_t d, int64_t pool_blocks,
                          int64_t block_size, const int32_t* blocks, int64_t max_blocks,
                          const int32_t* positions) {
  if (batch < 0 || kv_heads <= 0 || len < 0 || d <= 0 || pool_blocks < 0 || block_size <= 0 ||
      max_blocks <= 0 || !blocks || !positions || (elem_bytes != 2 && elem_bytes != 4)) {
    tfc_kernels_error("tfc_k_paged_kv_write: bad sizes or tables");
    return;
  }
  const int64_t row = d * elem_bytes;
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t* table = blocks + b * max_blocks;
    for (int64_t l = 0; l < len; ++l) {
      const int64_t p = static_cast<int64_t>(positions[b]) + l;
      if (p < 0 || p >= max_blocks * block_size) {
        tfc_kernels_error("kv_cache_update: position out of range of the block table");
        return;
      }
      const int64_t id = table[p / block_size];
      if (id < 0) continue;  // an idle row: nothing to keep
      if (id >= pool_blocks) {
        tfc_kernels_error("kv_cache_update: a block table entry is outside the pool");
        return;
      }
      for (int64_t h = 0; h < kv_heads; ++h) {
        memcpy(static_cast<char*>(pool) +
                   ((id * kv_heads + h) * block_size + p % block_size) * row,
               static_cast<const char*>(update) + ((b * kv_heads + h) * len + l) * row, row);
      }
    }
  }
}

}  // extern "C"
