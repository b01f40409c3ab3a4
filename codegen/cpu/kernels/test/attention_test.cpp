// tfc_k_attention_f32 against a double-precision softmax(QK^T)V reference (and
// tfc_k_attention_kvx_f32, a 16-bit KV cache, against it on the same values).
#include <gtest/gtest.h>
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

TEST_P(AttentionTest, LargeLogitsStayStable) {
  check({1, 2, 2, 40, 90, 64, 64, true, 10}, 30.f);
}

INSTANTIATE_TEST_SUITE_P(Isa, AttentionTest, ::testing::ValuesIn(available_isas()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace tfc_kern_test
