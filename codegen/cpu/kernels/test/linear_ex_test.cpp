// tfc_k_linear_ex_f32 (y = act(x W + bias) + residual, fused epilogue) against a
// double-precision reference, on every ISA this CPU runs: every activation (leaky relu
// with two slopes), with and
// without bias, residual none / separate / in place (y == residual), both weight layouts,
// shapes that reach each path (small M with the K split, small M dot products, packed
// tiles with one and several K blocks), serial and with a 2-thread host (bit-identical).
#include <gtest/gtest.h>
#include <math.h>
#include <string.h>

#include <array>
#include <limits>

#include "internal.h"
#include "test_util.h"

namespace tfc_kern_test {
namespace {

// The epilogues under test: the activation code and its parameter.
struct Act {
  int code;
  float alpha;
  const char* name;
};
const Act kActs[] = {{0, 0.f, "none"},           {1, 0.f, "gelu"},
                     {2, 0.f, "relu"},           {3, 0.f, "silu"},
                     {4, 0.01f, "leaky_relu 0.01"}, {4, 0.2f, "leaky_relu 0.2"}};

double act_ref(double x, const Act& a) {
  switch (a.code) {
    case 1: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case 2: return x > 0 ? x : 0.0;
    case 3: return x / (1.0 + exp(-x));
    case 4: return x > 0 ? x : (double)a.alpha * x;
    default: return x;
  }
}

struct Inputs {
  int64_t m, n, k;
  int tw;
  std::vector<float> x, w, bias, res;
  std::vector<double> z;  // x @ W in double (no bias)
};

Inputs make_inputs(uint64_t seed, int64_t m, int64_t n, int64_t k, int tw) {
  Inputs in{m, n, k, tw, {}, {}, {}, {}, {}};
  std::mt19937_64 rng(seed);
  // Weights scaled so that x W is O(1): the activations' curved parts are exercised.
  const float s = 4.f / sqrtf((float)k);
  in.x = random_vec(rng, (size_t)(m * k));
  in.w = random_vec(rng, (size_t)(k * n), -s, s);
  in.bias = random_vec(rng, (size_t)n);
  in.res = random_vec(rng, (size_t)(m * n));
  in.z.assign((size_t)(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        acc += (double)in.x[i * k + p] * (tw ? in.w[j * k + p] : in.w[p * n + j]);
      }
      in.z[i * n + j] = acc;
    }
  }
  return in;
}

enum ResMode { kNoRes = 0, kSeparate = 1, kInPlace = 2 };

// Runs one variant; returns y.
std::vector<float> run(const Inputs& in, bool bias, ResMode rm, const Act& act) {
  std::vector<float> y((size_t)(in.m * in.n), 7.f);
  const float* res = nullptr;
  if (rm == kSeparate) res = in.res.data();
  if (rm == kInPlace) {
    y = in.res;
    res = y.data();
  }
  tfc_k_linear_ex_f32(in.x.data(), in.w.data(), bias ? in.bias.data() : nullptr, res, y.data(),
                      in.m, in.n, in.k, in.tw, act.code, act.alpha);
  return y;
}

class LinearExTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(tfc_kernels_internal_set_isa(GetParam().c_str())); }
  void TearDown() override { tfc_kernels_internal_set_isa(nullptr); }

  // Every activation x bias x residual mode on one input set, serial and 2 threads.
  void check_all(const Inputs& in, double tol = 1e-5) {
    std::vector<double> ref((size_t)(in.m * in.n));
    for (const Act& act : kActs) {
      for (int b = 0; b < 2; ++b) {
        for (int rm = 0; rm < 3; ++rm) {
          SCOPED_TRACE(::testing::Message()
                       << "isa=" << GetParam() << " m=" << in.m << " n=" << in.n << " k=" << in.k
                       << " tw=" << in.tw << " act=" << act.name << " bias=" << b
                       << " residual=" << (rm == kNoRes ? "none" : rm == kSeparate ? "separate" : "in-place"));
          for (int64_t i = 0; i < in.m; ++i) {
            for (int64_t j = 0; j < in.n; ++j) {
              const size_t e = (size_t)(i * in.n + j);
              double v = act_ref(in.z[e] + (b ? (double)in.bias[j] : 0.0), act);
              if (rm != kNoRes) v += in.res[e];
              ref[e] = v;
            }
          }
          std::vector<float> y = run(in, b, (ResMode)rm, act);
          EXPECT_EQ(tfc_kernels_take_error(), nullptr);
          EXPECT_LE(rel_max_err(y.data(), ref.data(), y.size()), tol);
          ThreadHost host(2);
          std::vector<float> yp;
          {
            ScopedHost sh(host.api());
            yp = run(in, b, (ResMode)rm, act);
          }
          EXPECT_EQ(memcmp(y.data(), yp.data(), y.size() * sizeof(float)), 0)
              << "2-thread result differs from serial";
        }
      }
    }
  }
};

// {m, n, k}: m <= 4 reaches the small-M paths (tw=0: K split into blocks of 128 whose
// partial sums are reduced; tw=1: dot products); larger m the packed tiles, with one K
// block (k <= 256) or several (k > 512 on AVX-512, > 256 on AVX2 and scalar); n at most
// 4 NR (128, 64, 16) the direct path (one K block or several).
const int64_t kShapes[][3] = {
    {1, 77, 300},  {2, 129, 1000}, {3, 33, 129},  {4, 300, 640},  {1, 2304, 768},
    {15, 33, 257}, {29, 65, 513},  {33, 47, 77},  {47, 130, 1100}, {50, 100, 600},
    {14, 64, 256}, {5, 17, 3},     {20, 24, 16},  {32, 32, 32},   {17, 8, 8},
    {33, 12, 32},  {7, 1, 17},     {100, 7, 580}, {9, 3, 1000},   {40, 100, 32},
};

TEST_P(LinearExTest, ActivationsBiasResidual) {
  TFC_SEED_TRACE(run_seed());
  for (auto& s : kShapes) {
    for (int tw = 0; tw < 2; ++tw) {
      const uint64_t seed = run_seed() ^ (uint64_t)(s[0] * 1000003 + s[1] * 1009 + s[2] * 7 + tw);
      check_all(make_inputs(seed, s[0], s[1], s[2], tw));
    }
  }
}

TEST_P(LinearExTest, Large) {
  // GPT-2 MLP up-projection (256 x 768 @ 768 x 3072); the scalar path gets a smaller one.
  TFC_SEED_TRACE(run_seed());
  const bool slow = GetParam() == "scalar";
  static Inputs big[2];  // the double reference is the slow part: shared by the ISAs
  for (int tw = 0; tw < 2; ++tw) {
    if (slow) {
      check_all(make_inputs(run_seed() + 31 + tw, 64, 200, 768, tw));
      continue;
    }
    if (big[tw].x.empty()) big[tw] = make_inputs(run_seed() + 31 + tw, 256, 3072, 768, tw);
    check_all(big[tw]);
  }
}

TEST_P(LinearExTest, LinearIsLinearExWithoutEpilogue) {
  TFC_SEED_TRACE(run_seed());
  for (auto& s : {std::array<int64_t, 3>{3, 70, 300}, std::array<int64_t, 3>{40, 90, 600}}) {
    for (int tw = 0; tw < 2; ++tw) {
      Inputs in = make_inputs(run_seed() + 5, s[0], s[1], s[2], tw);
      std::vector<float> a((size_t)(in.m * in.n)), b((size_t)(in.m * in.n));
      tfc_k_linear_f32(in.x.data(), in.w.data(), in.bias.data(), a.data(), in.m, in.n, in.k, tw);
      tfc_k_linear_ex_f32(in.x.data(), in.w.data(), in.bias.data(), nullptr, b.data(), in.m,
                          in.n, in.k, tw, 0, 0.f);
      EXPECT_EQ(memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
    }
  }
}

// A bf16 or f16 weight gives, bit for bit, the f32 result on the same (rounded) values,
// for every epilogue, on every path (the f32 results are checked against the reference
// above; 2 threads give the same bits).
TEST_P(LinearExTest, SixteenBitWeights) {
  TFC_SEED_TRACE(run_seed());
  const bool slow = GetParam() == "scalar";
  for (auto& s : kShapes) {
    if (slow && s[0] * s[1] * s[2] > 5000000) continue;
    for (int tw = 0; tw < 2; ++tw) {
      for (int wt : {TFC_K_BF16, TFC_K_F16}) {
        Inputs in = make_inputs(run_seed() + 77 + tw, s[0], s[1], s[2], tw);
        std::vector<uint16_t> w16 = round_to_16bit(in.w, wt);
        for (const Act& act : kActs) {
          for (int rm = 0; rm < 3; ++rm) {
            SCOPED_TRACE(::testing::Message() << "isa=" << GetParam() << " m=" << in.m << " n="
                                              << in.n << " k=" << in.k << " tw=" << tw
                                              << " w_type=" << wt << " act=" << act.name
                                              << " residual mode=" << rm);
            std::vector<float> want = run(in, true, (ResMode)rm, act);
            auto run16 = [&] {
              std::vector<float> y((size_t)(in.m * in.n), 7.f);
              const float* res = rm == kSeparate ? in.res.data() : nullptr;
              if (rm == kInPlace) {
                y = in.res;
                res = y.data();
              }
              tfc_k_linear_ex_bx_f32(in.x.data(), w16.data(), wt, in.bias.data(), res, y.data(),
                                     in.m, in.n, in.k, in.tw, act.code, act.alpha);
              return y;
            };
            std::vector<float> got = run16();
            EXPECT_EQ(tfc_kernels_take_error(), nullptr);
            EXPECT_EQ(memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
            ThreadHost host(2);
            ScopedHost sh(host.api());
            std::vector<float> gotp = run16();
            EXPECT_EQ(memcmp(got.data(), gotp.data(), got.size() * sizeof(float)), 0);
          }
        }
      }
    }
  }
}

TEST_P(LinearExTest, ZeroK) {
  // k == 0: y = act(bias) + residual.
  std::mt19937_64 rng(run_seed() + 3);
  const int64_t m = 3, n = 5;
  auto bias = random_vec(rng, n), res = random_vec(rng, m * n);
  for (const Act& act : kActs) {
    SCOPED_TRACE(act.name);
    std::vector<float> y((size_t)(m * n), 7.f);
    tfc_k_linear_ex_f32(nullptr, nullptr, bias.data(), res.data(), y.data(), m, n, 0, 0,
                        act.code, act.alpha);
    std::vector<float> yi = res;
    tfc_k_linear_ex_f32(nullptr, nullptr, bias.data(), yi.data(), yi.data(), m, n, 0, 1,
                        act.code, act.alpha);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const double r = act_ref(bias[j], act) + res[i * n + j];
        EXPECT_NEAR(y[i * n + j], r, 1e-6);
        EXPECT_NEAR(yi[i * n + j], r, 1e-6);
      }
    }
  }
}

TEST_P(LinearExTest, NaNPropagates) {
  // A NaN in row 0 of x makes row 0 of y NaN for every activation (relu included) on
  // every path; the other rows stay finite.
  for (auto& s : {std::array<int64_t, 3>{2, 40, 300}, std::array<int64_t, 3>{20, 40, 600}}) {
    for (int tw = 0; tw < 2; ++tw) {
      Inputs in = make_inputs(run_seed() + 9, s[0], s[1], s[2], tw);
      in.x[1] = std::numeric_limits<float>::quiet_NaN();
      for (const Act& act : kActs) {
        SCOPED_TRACE(::testing::Message() << "m=" << s[0] << " tw=" << tw << " act=" << act.name);
        std::vector<float> y = run(in, true, kSeparate, act);
        for (int64_t j = 0; j < in.n; ++j) EXPECT_TRUE(isnan(y[j])) << j;
        for (int64_t j = in.n; j < in.m * in.n; ++j) EXPECT_TRUE(isfinite(y[j])) << j;
      }
    }
  }
}

// The leaky relu epilogue gives, bit for bit, tfc.leaky_relu's CPU lowering
// (select(x > 0, x, x * alpha) in f32, codegen/scalar/ScalarOps.cpp) applied to the
// product without an epilogue, on every path, serial and with 3 threads; NaN, signed zeros
// and infinities in the sum included.
TEST_P(LinearExTest, LeakyReluMatchesItsLowering) {
  TFC_SEED_TRACE(run_seed());
  for (auto& s : kShapes) {
    for (int tw = 0; tw < 2; ++tw) {
      Inputs in = make_inputs(run_seed() + 13 + tw, s[0], s[1], s[2], tw);
      std::vector<float> bias = in.bias;
      if (in.n > 3) {
        // Column j's sum is bias[j] when x W is 0: zero rows of W make x W exactly 0.
        for (int64_t p = 0; p < in.k; ++p) {
          for (int64_t j = 0; j < 4; ++j) (tw ? in.w[j * in.k + p] : in.w[p * in.n + j]) = 0.f;
        }
        bias[0] = -0.f;
        bias[1] = std::numeric_limits<float>::quiet_NaN();
        bias[2] = -std::numeric_limits<float>::infinity();
        bias[3] = 0.f;
      }
      for (float alpha : {0.01f, 0.2f}) {
        SCOPED_TRACE(::testing::Message() << "isa=" << GetParam() << " m=" << in.m << " n="
                                          << in.n << " k=" << in.k << " tw=" << tw
                                          << " alpha=" << alpha);
        std::vector<float> want((size_t)(in.m * in.n)), got(want.size()), gotp(want.size());
        tfc_k_linear_ex_f32(in.x.data(), in.w.data(), bias.data(), nullptr, want.data(), in.m,
                            in.n, in.k, tw, 0, 0.f);
        for (float& v : want) v = v > 0.f ? v : v * alpha;
        tfc_k_linear_ex_f32(in.x.data(), in.w.data(), bias.data(), nullptr, got.data(), in.m,
                            in.n, in.k, tw, 4, alpha);
        EXPECT_EQ(tfc_kernels_take_error(), nullptr);
        EXPECT_EQ(memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
        ThreadHost host(3);
        {
          ScopedHost sh(host.api());
          tfc_k_linear_ex_f32(in.x.data(), in.w.data(), bias.data(), nullptr, gotp.data(), in.m,
                              in.n, in.k, tw, 4, alpha);
        }
        EXPECT_EQ(memcmp(got.data(), gotp.data(), got.size() * sizeof(float)), 0)
            << "3-thread result differs from serial";
      }
    }
  }
}

TEST_P(LinearExTest, BadArguments) {
  float y = 0;
  tfc_k_linear_ex_f32(nullptr, nullptr, nullptr, nullptr, &y, 1, 1, 0, 0, 5, 0.f);
  EXPECT_NE(tfc_kernels_take_error(), nullptr);
  tfc_k_linear_ex_f32(nullptr, nullptr, nullptr, nullptr, &y, 1, 1, 0, 0, -1, 0.f);
  EXPECT_NE(tfc_kernels_take_error(), nullptr);
  tfc_k_linear_ex_f32(nullptr, nullptr, nullptr, nullptr, &y, -1, 1, 1, 0, 0, 0.f);
  EXPECT_NE(tfc_kernels_take_error(), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Isa, LinearExTest, ::testing::ValuesIn(available_isas()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace tfc_kern_test
