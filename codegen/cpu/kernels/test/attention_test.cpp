// tfc_k_attention_f32 against a double-precision softmax(QK^T)V reference (and
// tfc_k_attention_kvx_f32, a 16-bit KV cache, against it on the same values).
#include <gtest/gtest.h>

#include <algorithm>
#include <math.h>
#include <string.h>

#include "internal.h"
#include "test_util.h"

namespace tfc_kern_test {
namespace {

struct AttnCase {
  int64_t b, h, hkv, tq, tk, d, dv;
  bool causal;
  int64_t offset;
};

void reference(const std::vector<float>& q, const std::vector<float>& k,
               const std::vector<float>& v, std::vector<double>& out, const AttnCase& c,
               double scale) {
  const int64_t g = c.h / c.hkv;
  out.assign((size_t)(c.b * c.h * c.tq * c.dv), 0.0);
  std::vector<double> s((size_t)c.tk);
  for (int64_t b = 0; b < c.b; ++b) {
    for (int64_t h = 0; h < c.h; ++h) {
      const int64_t hk = h / g;
      for (int64_t i = 0; i < c.tq; ++i) {
        const float* qi = &q[(size_t)(((b * c.h + h) * c.tq + i) * c.d)];
        double mx = -INFINITY;
        int64_t nvis = c.causal ? std::min<int64_t>(c.tk, std::max<int64_t>(0, i + c.offset + 1))
                                : c.tk;
        for (int64_t j = 0; j < nvis; ++j) {
          const float* kj = &k[(size_t)(((b * c.hkv + hk) * c.tk + j) * c.d)];
          double acc = 0;
          for (int64_t p = 0; p < c.d; ++p) acc += (double)qi[p] * kj[p];
          s[j] = acc * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < nvis; ++j) sum += (s[j] = exp(s[j] - mx));
        double* o = &out[(size_t)(((b * c.h + h) * c.tq + i) * c.dv)];
        for (int64_t j = 0; j < nvis; ++j) {
          const float* vj = &v[(size_t)(((b * c.hkv + hk) * c.tk + j) * c.dv)];
          for (int64_t p = 0; p < c.dv; ++p) o[p] += s[j] / sum * vj[p];
        }
      }
    }
  }
}

class AttentionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(tfc_kernels_internal_set_isa(GetParam().c_str())); }
  void TearDown() override { tfc_kernels_internal_set_isa(nullptr); }

  void check(const AttnCase& c, float logit_range = 1.f) {
    TFC_SEED_TRACE(run_seed());
    SCOPED_TRACE(::testing::Message() << "isa=" << GetParam() << " B=" << c.b << " H=" << c.h
                                      << " Hkv=" << c.hkv << " Tq=" << c.tq << " Tk=" << c.tk
                                      << " D=" << c.d << " Dv=" << c.dv << " causal=" << c.causal
                                      << " offset=" << c.offset);
    std::mt19937_64 rng(run_seed() * 31 + (uint64_t)(c.tq * 7919 + c.tk * 13 + c.d + c.h));
    auto q = random_vec(rng, (size_t)(c.b * c.h * c.tq * c.d), -logit_range, logit_range);
    auto k = random_vec(rng, (size_t)(c.b * c.hkv * c.tk * c.d));
    auto v = random_vec(rng, (size_t)(c.b * c.hkv * c.tk * c.dv));
    const float scale = 1.f / sqrtf((float)c.d);
    std::vector<double> ref;
    reference(q, k, v, ref, c, scale);
    std::vector<float> out(ref.size(), NAN);
    tfc_k_attention_f32(q.data(), k.data(), v.data(), out.data(), c.b, c.h, c.hkv, c.tq, c.tk,
                        c.d, c.dv, c.causal, c.offset, scale);
    EXPECT_EQ(tfc_kernels_take_error(), nullptr);
    EXPECT_LE(rel_max_err(out.data(), ref.data(), out.size()), 1e-5);
    ThreadHost host(3);
    std::vector<float> outp(ref.size(), NAN);
    {
      ScopedHost sh(host.api());
      tfc_k_attention_f32(q.data(), k.data(), v.data(), outp.data(), c.b, c.h, c.hkv, c.tq, c.tk,
                          c.d, c.dv, c.causal, c.offset, scale);
    }
    EXPECT_EQ(memcmp(out.data(), outp.data(), out.size() * sizeof(float)), 0);
    // A bf16 / f16 KV cache: the f32 result on the same (rounded) values, bit for bit,
    // serial and with 3 threads.
    for (int kt : {TFC_K_BF16, TFC_K_F16}) {
      SCOPED_TRACE(::testing::Message() << "kv_type=" << kt);
      std::vector<float> kr = k, vr = v;
      const std::vector<uint16_t> k16 = round_to_16bit(kr, kt), v16 = round_to_16bit(vr, kt);
      std::vector<float> want(ref.size(), NAN), got(ref.size(), NAN), gotp(ref.size(), NAN);
      tfc_k_attention_f32(q.data(), kr.data(), vr.data(), want.data(), c.b, c.h, c.hkv, c.tq,
                          c.tk, c.d, c.dv, c.causal, c.offset, scale);
      tfc_k_attention_kvx_f32(q.data(), k16.data(), v16.data(), kt, got.data(), c.b, c.h, c.hkv,
                              c.tq, c.tk, c.d, c.dv, c.causal, c.offset, scale);
      EXPECT_EQ(tfc_kernels_take_error(), nullptr);
      EXPECT_EQ(memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
      {
        ScopedHost sh(host.api());
        tfc_k_attention_kvx_f32(q.data(), k16.data(), v16.data(), kt, gotp.data(), c.b, c.h,
                                c.hkv, c.tq, c.tk, c.d, c.dv, c.causal, c.offset, scale);
      }
      EXPECT_EQ(memcmp(got.data(), gotp.data(), got.size() * sizeof(float)), 0);
    }
  }
};

TEST_P(AttentionTest, FullAndCausal) {
  for (int causal = 0; causal < 2; ++causal) {
    check({1, 1, 1, 1, 1, 1, 1, causal != 0, 0});
    check({2, 3, 3, 17, 17, 64, 64, causal != 0, 0});
    check({1, 2, 2, 65, 65, 32, 48, causal != 0, 0});
    check({1, 2, 2, 129, 129, 64, 64, causal != 0, 0});
    check({1, 1, 1, 63, 300, 17, 9, causal != 0, 237});
    check({1, 2, 2, 3, 127, 128, 33, causal != 0, 124});
  }
}

TEST_P(AttentionTest, DecodeWithOffset) {
  // Tq = 1 at position pos over a cache of Tk = max context: keys > pos masked.
  for (int64_t pos : {0, 1, 63, 64, 127, 200, 255}) {
    check({2, 4, 4, 1, 256, 64, 64, true, pos});
  }
  // Head sizes that end inside a vector, no visible key (zeros), GQA without a mask.
  check({1, 3, 3, 1, 40, 17, 9, true, 25});
  check({1, 3, 3, 1, 40, 17, 9, true, -1});
  check({2, 4, 2, 1, 100, 72, 40, false, 0});
}

TEST_P(AttentionTest, PrefillChunks) {
  // A chunk of 37 queries starting at position p, keys up to the cache size.
  check({1, 4, 4, 37, 300, 64, 64, true, 100});
  check({2, 2, 2, 64, 128, 64, 64, true, 64});
  check({1, 3, 3, 16, 16, 16, 16, true, 0});
}

TEST_P(AttentionTest, GroupedQueryHeads) {
  check({2, 8, 2, 33, 33, 64, 64, true, 0});
  check({1, 6, 3, 1, 150, 32, 32, true, 120});
  check({1, 4, 1, 20, 70, 64, 40, false, 0});
  check({1, 12, 4, 1, 77, 64, 64, false, 0});
}

// tfc_k_attention_rows_f32: each row of the batch at its own position (serving's decode
// step over sequences of different lengths), against the reference row by row, and bit for
// bit against tfc_k_attention_kvx_f32 on that row alone, for f32 and 16-bit caches.
TEST_P(AttentionTest, OffsetPerRow) {
  TFC_SEED_TRACE(run_seed());
  for (AttnCase c : {AttnCase{4, 4, 2, 1, 96, 64, 64, true, 0},
                     AttnCase{3, 3, 3, 1, 40, 17, 9, true, 0},
                     AttnCase{2, 4, 4, 5, 64, 32, 32, true, 0}}) {
    SCOPED_TRACE(::testing::Message() << "isa=" << GetParam() << " B=" << c.b << " Tq=" << c.tq
                                      << " Tk=" << c.tk << " D=" << c.d);
    std::mt19937_64 rng(run_seed() * 17 + (uint64_t)(c.b * 101 + c.tk));
    auto q = random_vec(rng, (size_t)(c.b * c.h * c.tq * c.d));
    auto k = random_vec(rng, (size_t)(c.b * c.hkv * c.tk * c.d));
    auto v = random_vec(rng, (size_t)(c.b * c.hkv * c.tk * c.dv));
    std::vector<int32_t> offsets;
    for (int64_t b = 0; b < c.b; ++b) {
      // Positions spread over the cache: the first row at 0, one past its end (all visible).
      offsets.push_back(b == 0 ? 0 : (int32_t)(rng() % (uint64_t)(c.tk + 1)) - (b == 1 ? 1 : 0));
    }
    const float scale = 1.f / sqrtf((float)c.d);
    const int64_t qRow = c.h * c.tq * c.d, kRow = c.hkv * c.tk * c.d, vRow = c.hkv * c.tk * c.dv,
                  oRow = c.h * c.tq * c.dv;
    for (int kt : {TFC_K_F32, TFC_K_BF16, TFC_K_F16}) {
      SCOPED_TRACE(::testing::Message() << "kv_type=" << kt);
      std::vector<float> kr = k, vr = v;
      std::vector<uint16_t> k16, v16;
      if (kt != TFC_K_F32) {
        k16 = round_to_16bit(kr, kt);
        v16 = round_to_16bit(vr, kt);
      }
      const void* kp = kt == TFC_K_F32 ? (const void*)kr.data() : (const void*)k16.data();
      const void* vp = kt == TFC_K_F32 ? (const void*)vr.data() : (const void*)v16.data();
      const int64_t bytes = kt == TFC_K_F32 ? 4 : 2;
      std::vector<float> got((size_t)(c.b * oRow), NAN);
      tfc_k_attention_rows_f32(q.data(), kp, vp, kt, got.data(), c.b, c.h, c.hkv, c.tq, c.tk,
                               c.d, c.dv, offsets.data(), scale);
      EXPECT_EQ(tfc_kernels_take_error(), nullptr);
      for (int64_t b = 0; b < c.b; ++b) {
        AttnCase one = c;
        one.b = 1;
        one.offset = offsets[(size_t)b];
        std::vector<float> qb(q.begin() + b * qRow, q.begin() + (b + 1) * qRow);
        std::vector<float> kb(kr.begin() + b * kRow, kr.begin() + (b + 1) * kRow);
        std::vector<float> vb(vr.begin() + b * vRow, vr.begin() + (b + 1) * vRow);
        std::vector<double> ref;
        reference(qb, kb, vb, ref, one, scale);
        EXPECT_LE(rel_max_err(got.data() + b * oRow, ref.data(), ref.size()), 1e-5)
            << "row " << b << " at offset " << one.offset;
        std::vector<float> alone((size_t)oRow, NAN);
        tfc_k_attention_kvx_f32(qb.data(), static_cast<const char*>(kp) + b * kRow * bytes,
                                static_cast<const char*>(vp) + b * vRow * bytes, kt, alone.data(),
                                1, c.h, c.hkv, c.tq, c.tk, c.d, c.dv, 1, one.offset, scale);
        EXPECT_EQ(memcmp(alone.data(), got.data() + b * oRow, alone.size() * sizeof(float)), 0)
            << "row " << b;
      }
    }
  }
}

// tfc_k_paged_kv_write and tfc_k_attention_paged_f32 (serving's paged KV cache): each row's
// keys and values are written through a shuffled block table into a pool of blocks, then
// attended at its own position; against the reference on the row's contiguous cache, and
// bit for bit against tfc_k_attention_kvx_f32 on that row's blocks laid out in order.
TEST_P(AttentionTest, PagedCache) {
  TFC_SEED_TRACE(run_seed());
  struct PagedCase {
    int64_t b, h, hkv, tq, d, dv, block, maxBlocks;
  };
  for (PagedCase c : {PagedCase{4, 4, 2, 1, 64, 64, 16, 6}, PagedCase{3, 3, 3, 5, 17, 9, 4, 9},
                      PagedCase{2, 8, 2, 24, 32, 32, 8, 5}}) {
    const int64_t ctx = c.block * c.maxBlocks, poolBlocks = c.b * c.maxBlocks + 3;
    SCOPED_TRACE(::testing::Message() << "isa=" << GetParam() << " B=" << c.b << " Tq=" << c.tq
                                      << " S=" << c.block << " D=" << c.d);
    std::mt19937_64 rng(run_seed() * 29 + (uint64_t)(c.b * 7 + c.block));
    // A shuffled pool: row b's block i is perm[b * maxBlocks + i].
    std::vector<int32_t> perm((size_t)poolBlocks);
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = (int32_t)i;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int32_t> table(perm.begin(), perm.begin() + c.b * c.maxBlocks);
    std::vector<int32_t> positions, zeros((size_t)c.b, 0);
    for (int64_t b = 0; b < c.b; ++b)
      positions.push_back((int32_t)(rng() % (uint64_t)(ctx - c.tq + 1)));
    auto q = random_vec(rng, (size_t)(c.b * c.h * c.tq * c.d));
    auto k = random_vec(rng, (size_t)(c.b * c.hkv * ctx * c.d));   // [B, Hkv, ctx, D]
    auto v = random_vec(rng, (size_t)(c.b * c.hkv * ctx * c.dv));
    const float scale = 1.f / sqrtf((float)c.d);
    for (int kt : {TFC_K_F32, TFC_K_BF16}) {
      SCOPED_TRACE(::testing::Message() << "kv_type=" << kt);
      std::vector<float> kr = k, vr = v;
      std::vector<uint16_t> k16, v16;
      if (kt != TFC_K_F32) {
        k16 = round_to_16bit(kr, kt);
        v16 = round_to_16bit(vr, kt);
      }
      const int64_t bytes = kt == TFC_K_F32 ? 4 : 2;
      const char* kp = kt == TFC_K_F32 ? (const char*)kr.data() : (const char*)k16.data();
      const char* vp = kt == TFC_K_F32 ? (const char*)vr.data() : (const char*)v16.data();
      std::vector<char> kpool((size_t)(poolBlocks * c.hkv * c.block * c.d * bytes), 0);
      std::vector<char> vpool((size_t)(poolBlocks * c.hkv * c.block * c.dv * bytes), 0);
      // The whole context of every row in one call, from position 0.
      tfc_k_paged_kv_write(kpool.data(), kp, bytes, c.b, c.hkv, ctx, c.d, poolBlocks, c.block,
                           table.data(), c.maxBlocks, zeros.data());
      tfc_k_paged_kv_write(vpool.data(), vp, bytes, c.b, c.hkv, ctx, c.dv, poolBlocks, c.block,
                           table.data(), c.maxBlocks, zeros.data());
      ASSERT_EQ(tfc_kernels_take_error(), nullptr);
      const int64_t oRow = c.h * c.tq * c.dv;
      std::vector<float> got((size_t)(c.b * oRow), NAN);
      tfc_k_attention_paged_f32(q.data(), kpool.data(), vpool.data(), kt, got.data(), c.b, c.h,
                                c.hkv, c.tq, c.d, c.dv, poolBlocks, c.block, table.data(),
                                c.maxBlocks, positions.data(), scale);
      ASSERT_EQ(tfc_kernels_take_error(), nullptr);
      for (int64_t b = 0; b < c.b; ++b) {
        AttnCase one{1, c.h, c.hkv, c.tq, ctx, c.d, c.dv, true, positions[(size_t)b]};
        std::vector<float> qb(q.begin() + b * c.h * c.tq * c.d,
                              q.begin() + (b + 1) * c.h * c.tq * c.d);
        std::vector<float> kb(kr.begin() + b * c.hkv * ctx * c.d,
                              kr.begin() + (b + 1) * c.hkv * ctx * c.d);
        std::vector<float> vb(vr.begin() + b * c.hkv * ctx * c.dv,
                              vr.begin() + (b + 1) * c.hkv * ctx * c.dv);
        std::vector<double> ref;
        reference(qb, kb, vb, ref, one, scale);
        EXPECT_LE(rel_max_err(got.data() + b * oRow, ref.data(), ref.size()), 1e-5)
            << "row " << b << " at position " << one.offset;
        // The row's visible blocks in order: the contiguous kernel on them.
        const int64_t nb = (positions[(size_t)b] + c.tq + c.block - 1) / c.block;
        std::vector<char> kin((size_t)(c.hkv * nb * c.block * c.d * bytes));
        std::vector<char> vin((size_t)(c.hkv * nb * c.block * c.dv * bytes));
        for (int64_t h = 0; h < c.hkv; ++h) {
          memcpy(kin.data() + h * nb * c.block * c.d * bytes,
                 kp + (b * c.hkv + h) * ctx * c.d * bytes, (size_t)(nb * c.block * c.d * bytes));
          memcpy(vin.data() + h * nb * c.block * c.dv * bytes,
                 vp + (b * c.hkv + h) * ctx * c.dv * bytes,
                 (size_t)(nb * c.block * c.dv * bytes));
        }
        std::vector<float> alone((size_t)oRow, NAN);
        tfc_k_attention_kvx_f32(qb.data(), kin.data(), vin.data(), kt, alone.data(), 1, c.h,
                                c.hkv, c.tq, nb * c.block, c.d, c.dv, 1, one.offset, scale);
        EXPECT_EQ(memcmp(alone.data(), got.data() + b * oRow, alone.size() * sizeof(float)), 0)
            << "row " << b;
      }
    }
  }
  // An idle row (first entry < 0): its result is 0 and its writes are dropped; a block
  // outside the pool and a position past the table are errors.
  const int64_t S = 4, M = 2, H = 2, D = 8;
  std::vector<float> pool((size_t)(3 * H * S * D), 1.f), upd((size_t)(2 * H * 1 * D), 5.f);
  std::vector<float> qv((size_t)(2 * H * D), 0.5f), o((size_t)(2 * H * D), NAN);
  std::vector<int32_t> tbl = {-1, -1, 2, 0}, pos = {0, 4};
  tfc_k_paged_kv_write(pool.data(), upd.data(), 4, 2, H, 1, D, 3, S, tbl.data(), M, pos.data());
  ASSERT_EQ(tfc_kernels_take_error(), nullptr);
  for (int64_t i = 0; i < 3 * H * S * D; ++i) {
    // Only row 1's position 4 (block 0, slot 0) of each head was written.
    const bool written = i / (H * S * D) == 0 && (i % (S * D)) / D == 0;
    EXPECT_EQ(pool[(size_t)i], written ? 5.f : 1.f) << "element " << i;
  }
  tfc_k_attention_paged_f32(qv.data(), pool.data(), pool.data(), TFC_K_F32, o.data(), 2, H, H, 1,
                            D, D, 3, S, tbl.data(), M, pos.data(), 0.5f);
  ASSERT_EQ(tfc_kernels_take_error(), nullptr);
  for (int64_t i = 0; i < H * D; ++i) EXPECT_EQ(o[(size_t)i], 0.f);
  std::vector<int32_t> outside = {3, 0, 2, 0};
  tfc_k_attention_paged_f32(qv.data(), pool.data(), pool.data(), TFC_K_F32, o.data(), 2, H, H, 1,
                            D, D, 3, S, outside.data(), M, pos.data(), 0.5f);
  const char* err = tfc_kernels_take_error();
  ASSERT_NE(err, nullptr);
  EXPECT_NE(strstr(err, "outside the pool"), nullptr) << err;
  std::vector<int32_t> past = {0, 8};
  tfc_k_paged_kv_write(pool.data(), upd.data(), 4, 2, H, 1, D, 3, S, tbl.data(), M, past.data());
  err = tfc_kernels_take_error();
  ASSERT_NE(err, nullptr);
  EXPECT_NE(strstr(err, "position out of range"), nullptr) << err;
}

TEST_P(AttentionTest, LargeLogitsStayStable) {
  check({1, 2, 2, 40, 90, 64, 64, true, 10}, 30.f);
  check({2, 2, 2, 17, 17, 8, 8, true, 0}, 30.f);
  check({2, 2, 2, 9, 30, 16, 16, false, 0}, 30.f);
}

TEST_P(AttentionTest, SmallHeads) {
  // The seed experiment's encoder-decoder (head dim 8, 16 and 17 tokens) and shapes
  // around it: up to 32 keys take the small path, 33 the tiled one.
  for (int causal = 0; causal < 2; ++causal) {
    check({8, 4, 4, 16, 16, 8, 8, causal != 0, 0});
    check({8, 4, 4, 17, 17, 8, 8, causal != 0, 0});
    check({2, 4, 2, 9, 25, 16, 16, causal != 0, 7});
    check({2, 2, 2, 32, 32, 16, 16, causal != 0, 0});
    check({2, 2, 2, 5, 8, 8, 8, causal != 0, -3});  // rows fully masked
    check({1, 2, 2, 33, 33, 8, 8, causal != 0, 0});
  }
  check({8, 4, 4, 17, 16, 8, 8, false, 0});  // decoder cross-attention: Tq != Tk
  check({2, 4, 4, 1, 32, 8, 8, true, 20});   // decoding one token
}

// tfc_k_attention_grad_f32 against the gradients of the double-precision reference:
// with P = softmax(scale Q K^T), dV = P^T dO, dS = P * (dO V^T - rowsum(P * dO V^T)),
// dQ = scale dS K, dK = scale dS^T Q. Small heads and short sequences (the seed
// experiment's encoder, decoder and cross-attention) take their own path; the others
// check the general one on the same reference.
void grad_reference(const std::vector<float>& q, const std::vector<float>& k,
                    const std::vector<float>& v, const std::vector<float>& dout,
                    std::vector<double>& dq, std::vector<double>& dk, std::vector<double>& dv,
                    const AttnCase& c, double scale) {
  const int64_t g = c.h / c.hkv;
  dq.assign((size_t)(c.b * c.h * c.tq * c.d), 0.0);
  dk.assign((size_t)(c.b * c.hkv * c.tk * c.d), 0.0);
  dv.assign((size_t)(c.b * c.hkv * c.tk * c.dv), 0.0);
  std::vector<double> p((size_t)c.tk), dp((size_t)c.tk);
  for (int64_t b = 0; b < c.b; ++b) {
    for (int64_t h = 0; h < c.h; ++h) {
      const int64_t kv = b * c.hkv + h / g;
      for (int64_t i = 0; i < c.tq; ++i) {
        const int64_t row = (b * c.h + h) * c.tq + i;
        const int64_t nvis =
            c.causal ? std::min<int64_t>(c.tk, std::max<int64_t>(0, i + c.offset + 1)) : c.tk;
        double mx = -INFINITY, sum = 0, delta = 0;
        for (int64_t j = 0; j < nvis; ++j) {
          double s = 0, d = 0;
          for (int64_t e = 0; e < c.d; ++e)
            s += (double)q[row * c.d + e] * k[(kv * c.tk + j) * c.d + e];
          for (int64_t e = 0; e < c.dv; ++e)
            d += (double)dout[row * c.dv + e] * v[(kv * c.tk + j) * c.dv + e];
          p[j] = s * scale;
          dp[j] = d;
          mx = std::max(mx, p[j]);
        }
        for (int64_t j = 0; j < nvis; ++j) sum += (p[j] = exp(p[j] - mx));
        for (int64_t j = 0; j < nvis; ++j) delta += (p[j] /= sum) * dp[j];
        for (int64_t j = 0; j < nvis; ++j) {
          const double ds = p[j] * (dp[j] - delta) * scale;
          for (int64_t e = 0; e < c.dv; ++e)
            dv[(kv * c.tk + j) * c.dv + e] += p[j] * dout[row * c.dv + e];
          for (int64_t e = 0; e < c.d; ++e) {
            dq[row * c.d + e] += ds * k[(kv * c.tk + j) * c.d + e];
            dk[(kv * c.tk + j) * c.d + e] += ds * q[row * c.d + e];
          }
        }
      }
    }
  }
}

void check_grad(const AttnCase& c) {
  TFC_SEED_TRACE(run_seed());
  SCOPED_TRACE(::testing::Message() << "B=" << c.b << " H=" << c.h << " Hkv=" << c.hkv
                                    << " Tq=" << c.tq << " Tk=" << c.tk << " D=" << c.d
                                    << " Dv=" << c.dv << " causal=" << c.causal
                                    << " offset=" << c.offset);
  std::mt19937_64 rng(run_seed() * 37 + (uint64_t)(c.tq * 7919 + c.tk * 13 + c.d + c.h));
  auto q = random_vec(rng, (size_t)(c.b * c.h * c.tq * c.d));
  auto k = random_vec(rng, (size_t)(c.b * c.hkv * c.tk * c.d));
  auto v = random_vec(rng, (size_t)(c.b * c.hkv * c.tk * c.dv));
  auto dout = random_vec(rng, (size_t)(c.b * c.h * c.tq * c.dv));
  const float scale = 1.f / sqrtf((float)c.d);
  std::vector<float> o((size_t)(c.b * c.h * c.tq * c.dv));
  tfc_k_attention_f32(q.data(), k.data(), v.data(), o.data(), c.b, c.h, c.hkv, c.tq, c.tk, c.d,
                      c.dv, c.causal, c.offset, scale);
  std::vector<double> rq, rk, rv;
  grad_reference(q, k, v, dout, rq, rk, rv, c, scale);
  std::vector<float> dq(rq.size(), NAN), dk(rk.size(), NAN), dv(rv.size(), NAN);
  tfc_k_attention_grad_f32(q.data(), k.data(), v.data(), o.data(), dout.data(), dq.data(),
                           dk.data(), dv.data(), c.b, c.h, c.hkv, c.tq, c.tk, c.d, c.dv, c.causal,
                           c.offset, scale);
  EXPECT_EQ(tfc_kernels_take_error(), nullptr);
  EXPECT_LE(rel_max_err(dq.data(), rq.data(), dq.size()), 1e-4);
  EXPECT_LE(rel_max_err(dk.data(), rk.data(), dk.size()), 1e-4);
  EXPECT_LE(rel_max_err(dv.data(), rv.data(), dv.size()), 1e-4);
  // The same bits with 3 threads.
  ThreadHost host(3);
  std::vector<float> dqp(rq.size(), NAN), dkp(rk.size(), NAN), dvp(rv.size(), NAN);
  {
    ScopedHost sh(host.api());
    tfc_k_attention_grad_f32(q.data(), k.data(), v.data(), o.data(), dout.data(), dqp.data(),
                             dkp.data(), dvp.data(), c.b, c.h, c.hkv, c.tq, c.tk, c.d, c.dv,
                             c.causal, c.offset, scale);
  }
  EXPECT_EQ(memcmp(dq.data(), dqp.data(), dq.size() * sizeof(float)), 0);
  EXPECT_EQ(memcmp(dk.data(), dkp.data(), dk.size() * sizeof(float)), 0);
  EXPECT_EQ(memcmp(dv.data(), dvp.data(), dv.size() * sizeof(float)), 0);
}

TEST_P(AttentionTest, GradSmallHeads) {
  for (int causal = 0; causal < 2; ++causal) {
    check_grad({8, 4, 4, 16, 16, 8, 8, causal != 0, 0});   // encoder self-attention
    check_grad({8, 4, 4, 17, 17, 8, 8, causal != 0, 0});   // decoder self-attention
    check_grad({4, 2, 2, 9, 16, 16, 16, causal != 0, 7});  // D = 16, a causal offset
    check_grad({3, 4, 2, 5, 3, 8, 8, causal != 0, 0});     // grouped heads
    check_grad({3, 2, 2, 6, 4, 8, 8, causal != 0, -2});    // rows fully masked
    check_grad({2, 2, 2, 32, 32, 16, 16, causal != 0, 0});  // the longest scalar tail
    check_grad({2, 3, 3, 7, 25, 8, 8, causal != 0, 18});
    check_grad({1, 2, 2, 40, 33, 8, 8, causal != 0, 0});   // past the small path
  }
  check_grad({8, 4, 4, 17, 16, 8, 8, false, 0});  // decoder cross-attention: Tq != Tk
  check_grad({8, 4, 4, 16, 17, 8, 8, false, 0});
}

TEST_P(AttentionTest, GradGeneral) {
  check_grad({2, 3, 3, 33, 33, 64, 64, true, 0});
  check_grad({1, 4, 2, 20, 70, 32, 40, false, 0});
  // V rows longer than the padded keys and K rows: the zero rows standing in for a
  // block's missing query rows must be as long as a dO row.
  check_grad({1, 2, 2, 3, 5, 8, 72, true, 2});
}

INSTANTIATE_TEST_SUITE_P(Isa, AttentionTest, ::testing::ValuesIn(available_isas()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace tfc_kern_test
