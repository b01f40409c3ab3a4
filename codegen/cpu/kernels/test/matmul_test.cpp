// tfc_k_matmul_f32 / tfc_k_linear_f32 against a double-precision reference, on every ISA
// this CPU runs, serial and with a 3-thread host (bit-identical: the K blocking depends on
// K only and every output element is summed in the same order whatever the partition).
#include <gtest/gtest.h>
#include <immintrin.h>
#include <string.h>

#include <array>
#include <cmath>
#include <limits>

#include "internal.h"
#include "test_util.h"

namespace tfc_kern_test {
namespace {

struct MatmulCase {
  int64_t batch, m, n, k;
  bool ta, tb;
  int64_t sa, sb, sc;  // in units: -1 = dense, 0 = broadcast, else extra gap
  bool acc;
  int64_t pb = 0;  // > 0: item b reads B's matrix b % pb (period_b)
};

// Reference: C[b] = sum_k op(A)op(B) (+C); with stride_c == 0 all batches sum into C.
void reference(const std::vector<float>& A, const std::vector<float>& B,
               const std::vector<float>& C0, std::vector<double>& C, const MatmulCase& c,
               int64_t sa, int64_t sb, int64_t sc) {
  const int64_t M = c.m, N = c.n, K = c.k;
  C.assign(C0.begin(), C0.end());
  std::vector<bool> initialized(C.size(), false);
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t p = 0; p < K; ++p) {
          double a = c.ta ? A[b * sa + p * M + i] : A[b * sa + i * K + p];
          const int64_t bm = c.pb > 0 ? b % c.pb : b;
          double bb = c.tb ? B[bm * sb + j * K + p] : B[bm * sb + p * N + j];
          s += a * bb;
        }
        size_t idx = (size_t)(b * sc + i * N + j);
        bool add = c.acc || initialized[idx];
        C[idx] = add ? C[idx] + s : s;
        initialized[idx] = true;
      }
    }
  }
}

class MatmulTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(tfc_kernels_internal_set_isa(GetParam().c_str())); }
  void TearDown() override { tfc_kernels_internal_set_isa(nullptr); }

  // b_type TFC_K_BF16 / TFC_K_F16: B is rounded to that type and passed as 16-bit bits to
  // tfc_k_matmul_bx_f32; the reference uses the rounded values, and the result must equal
  // tfc_k_matmul_f32's on them bit for bit (the widening is exact and the order the same).
  void check(const MatmulCase& c, double tol = 1e-5, int b_type = TFC_K_F32) {
    const uint64_t seed = run_seed() ^ (uint64_t)(c.m * 1000003 + c.n * 1009 + c.k * 7 + c.batch +
                                                  c.ta * 2 + c.tb * 4);
    TFC_SEED_TRACE(run_seed());
    SCOPED_TRACE(::testing::Message() << "isa=" << GetParam() << " batch=" << c.batch << " m=" << c.m
                                      << " n=" << c.n << " k=" << c.k << " ta=" << c.ta
                                      << " tb=" << c.tb << " sa=" << c.sa << " sb=" << c.sb
                                      << " sc=" << c.sc << " acc=" << c.acc << " pb=" << c.pb
                                      << " b_type=" << b_type);
    std::mt19937_64 rng(seed);
    auto stride = [&](int64_t s, int64_t size) { return s < 0 ? size : (s == 0 ? 0 : size + s); };
    const int64_t sa = stride(c.sa, c.m * c.k), sb = stride(c.sb, c.k * c.n),
                  sc = stride(c.sc, c.m * c.n);
    const int64_t nb = c.batch > 0 ? c.batch : 1;
    auto A = random_vec(rng, (size_t)(sa * (nb - 1) + c.m * c.k + 1));
    auto B = random_vec(rng, (size_t)(sb * (nb - 1) + c.k * c.n + 1));
    auto C0 = random_vec(rng, (size_t)(sc * (nb - 1) + c.m * c.n + 1));
    std::vector<uint16_t> B16;
    if (b_type != TFC_K_F32) B16 = round_to_16bit(B, b_type);
    const void* bptr = b_type == TFC_K_F32 ? (const void*)B.data() : (const void*)B16.data();
    std::vector<double> ref;
    reference(A, B, C0, ref, c, sa, sb, sc);
    std::vector<float> C = C0;
    tfc_k_matmul_bx_f32(A.data(), bptr, b_type, C.data(), c.batch, c.m, c.n, c.k, c.ta, c.tb, sa,
                        sb, c.pb, sc, c.acc);
    EXPECT_EQ(tfc_kernels_take_error(), nullptr);
    EXPECT_LE(rel_max_err(C.data(), ref.data(), C.size()), tol);
    if (b_type != TFC_K_F32) {
      std::vector<float> C32 = C0;
      tfc_k_matmul_bx_f32(A.data(), B.data(), TFC_K_F32, C32.data(), c.batch, c.m, c.n, c.k, c.ta,
                          c.tb, sa, sb, c.pb, sc, c.acc);
      EXPECT_EQ(memcmp(C.data(), C32.data(), C.size() * sizeof(float)), 0)
          << "16-bit B differs from f32 B holding the same values";
    }
    // With a 3-thread host: the same bits.
    ThreadHost host(3);
    std::vector<float> Cp = C0;
    {
      ScopedHost sh(host.api());
      tfc_k_matmul_bx_f32(A.data(), bptr, b_type, Cp.data(), c.batch, c.m, c.n, c.k, c.ta, c.tb,
                          sa, sb, c.pb, sc, c.acc);
    }
    EXPECT_EQ(memcmp(C.data(), Cp.data(), C.size() * sizeof(float)), 0)
        << "parallel result differs from serial";
  }
};

const int64_t kSizes[][3] = {
    {1, 1, 1},     {1, 17, 3},    {3, 5, 7},      {1, 65, 129},   {2, 129, 63},  {4, 300, 64},
    {5, 7, 1},     {13, 31, 17},  {14, 32, 256},  {15, 33, 257},  {17, 63, 65},  {28, 64, 512},
    {63, 65, 127}, {65, 63, 3},   {127, 129, 17}, {129, 127, 65}, {100, 50, 600}, {6, 16, 33},
    {7, 1, 100},   {1, 1000, 17}, {3, 513, 40},   {64, 1, 9},
};

TEST_P(MatmulTest, ShapesAndTransposes) {
  for (auto& s : kSizes) {
    for (int t = 0; t < 4; ++t) {
      for (int acc = 0; acc < 2; ++acc) {
        check({1, s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0, -1, -1, -1, acc != 0});
      }
    }
  }
}

TEST_P(MatmulTest, LargeK) {
  // GPT-2 MLP down-projection depth; the scalar path gets a smaller M/N.
  const bool slow = GetParam() == "scalar";
  check({1, slow ? 9 : 65, slow ? 20 : 129, 3072, false, false, -1, -1, -1, false});
  check({1, 3, 77, 3072, false, true, -1, -1, -1, true});
  check({1, slow ? 17 : 130, slow ? 19 : 70, 3072, true, true, -1, -1, -1, false});
}

TEST_P(MatmulTest, BatchStrides) {
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    // (16 x 8 @ 8 x 8 and 17 x 32 @ 32 x 32: the tiny-product path.)
    for (auto& s : {std::array<int64_t, 3>{17, 33, 29}, std::array<int64_t, 3>{3, 70, 20},
                    std::array<int64_t, 3>{40, 5, 64}, std::array<int64_t, 3>{16, 8, 8},
                    std::array<int64_t, 3>{17, 32, 32}}) {
      check({3, s[0], s[1], s[2], ta, tb, -1, -1, -1, false});
      check({3, s[0], s[1], s[2], ta, tb, 0, -1, -1, false});   // broadcast A
      check({4, s[0], s[1], s[2], ta, tb, -1, 0, -1, true});    // broadcast B
      check({2, s[0], s[1], s[2], ta, tb, 5, 3, 7, true});      // gaps between matrices
      check({3, s[0], s[1], s[2], ta, tb, -1, -1, 0, false});   // one C: sum over batch
      check({3, s[0], s[1], s[2], ta, tb, -1, -1, 0, true});
    }
  }
}

// The direct path (op(B) at most 4 NR columns: A and B read in place): the seed model's
// batched per-head products, its weight gradients X^T dY over ~1000 rows, strides,
// accumulate, partial register blocks, several K blocks.
TEST_P(MatmulTest, DirectSmallProducts) {
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    for (auto& s : {std::array<int64_t, 3>{16, 8, 8}, std::array<int64_t, 3>{17, 8, 8},
                    std::array<int64_t, 3>{8, 8, 16}, std::array<int64_t, 3>{8, 8, 17}}) {
      check({256, s[0], s[1], s[2], ta, tb, -1, -1, -1, false});
      check({64, s[0], s[1], s[2], ta, tb, -1, 0, -1, true});  // broadcast B
      check({9, s[0], s[1], s[2], ta, tb, 3, 5, 2, true});     // gaps between matrices
    }
    for (int64_t m : {1, 7, 17, 33}) {
      for (int64_t n : {1, 7, 17, 33}) {
        for (int64_t k : {1, 7, 17, 33}) {
          check({2, m, n, k, ta, tb, -1, -1, -1, (m + n + k) % 2 == 0});
        }
      }
    }
    check({1, 1088, 32, 32, ta, tb, -1, -1, -1, false});  // batch 1: chunks of rows
    check({1, 1088, 12, 128, ta, tb, -1, -1, -1, true});
    check({1, 1088, 128, 32, ta, tb, -1, -1, -1, false});  // several column blocks
    check({5, 40, 70, 20, ta, tb, -1, -1, -1, true});
    check({3, 9, 3, 1100, ta, tb, -1, -1, -1, false});    // several K blocks
    check({2, 21, 4, 1000, ta, tb, -1, -1, -1, true});
    check({1, 128, 32, 1088, ta, tb, -1, -1, -1, false});  // X^T dY, d_model 32
    check({1, 32, 128, 1088, ta, tb, -1, -1, -1, true});
    check({1, 32, 12, 1088, ta, tb, -1, -1, -1, false});
  }
  // A transposed B too deep for the direct path's 16 MiB buffer: the packed path.
  check({1, 5, 3, (4 << 20) / tfc_kern::isa().nr + 1, false, true, -1, -1, -1, true});
}

// Packed products (op(B) wider than 4 NR, or 16-bit B) with few tiles: M chunks of equal
// height that are not panel multiples, B packed before the tiles, serial and threaded.
TEST_P(MatmulTest, FewTiles) {
  const int64_t wide = 4 * tfc_kern::isa().nr;
  for (auto& s : {std::array<int64_t, 3>{32, wide + 4, 1024},
                  std::array<int64_t, 3>{30, wide + 12, 700},
                  std::array<int64_t, 3>{45, wide + 1, 300}}) {
    check({1, s[0], s[1], s[2], true, false, -1, -1, -1, false});
    check({1, s[0], s[1], s[2], false, false, -1, -1, -1, true});
  }
  // One N tile over several M chunks: B packed once up front (f32, 16-bit, B^T, batches).
  for (int bt : {TFC_K_F32, TFC_K_BF16, TFC_K_F16}) {
    for (int tb = 0; tb < 2; ++tb) {
      check({1, 128, 32, 1088, true, tb != 0, -1, -1, -1, false}, 1e-5, bt);
      check({2, 100, 40, 300, false, tb != 0, -1, -1, -1, true}, 1e-5, bt);
      check({3, 60, 20, 700, true, tb != 0, -1, 0, -1, false}, 1e-5, bt);  // broadcast B
    }
  }
}

// The direct path runs the packed microkernel's sequence of operations on the same K
// blocks: its columns equal those of the same product made wide enough for the packed
// path, bit for bit.
TEST_P(MatmulTest, DirectEqualsPacked) {
  TFC_SEED_TRACE(run_seed());
  std::mt19937_64 rng(run_seed() + 23);
  const int64_t nr = tfc_kern::isa().nr;
  for (auto& s : {std::array<int64_t, 3>{16, 8, 8}, std::array<int64_t, 3>{17, 7, 33},
                  std::array<int64_t, 3>{40, 4, 1000}, std::array<int64_t, 3>{9, 3, 600}}) {
    for (int t = 0; t < 4; ++t) {
      for (int acc = 0; acc < 2; ++acc) {
        const bool ta = t & 1, tb = t & 2;
        const int64_t M = s[0], N = s[1], K = s[2], W = 4 * nr + 5;  // W > 4 NR: packed
        SCOPED_TRACE(::testing::Message() << "isa=" << GetParam() << " m=" << M << " n=" << N
                                          << " k=" << K << " ta=" << ta << " tb=" << tb
                                          << " acc=" << acc);
        auto A = random_vec(rng, (size_t)(M * K)), Bw = random_vec(rng, (size_t)(K * W)),
             Cw = random_vec(rng, (size_t)(M * W));
        // B: the first N columns of op(Bw); C likewise of Cw.
        std::vector<float> B((size_t)(K * N)), C((size_t)(M * N));
        for (int64_t p = 0; p < K; ++p) {
          for (int64_t j = 0; j < N; ++j) {
            (tb ? B[j * K + p] : B[p * N + j]) = tb ? Bw[j * K + p] : Bw[p * W + j];
          }
        }
        for (int64_t i = 0; i < M; ++i) {
          for (int64_t j = 0; j < N; ++j) C[i * N + j] = Cw[i * W + j];
        }
        tfc_k_matmul_f32(A.data(), B.data(), C.data(), 1, M, N, K, ta, tb, 0, 0, 0, acc);
        tfc_k_matmul_f32(A.data(), Bw.data(), Cw.data(), 1, M, W, K, ta, tb, 0, 0, 0, acc);
        for (int64_t i = 0; i < M; ++i) {
          ASSERT_EQ(memcmp(&C[i * N], &Cw[i * W], N * sizeof(float)), 0) << "row " << i;
        }
      }
    }
  }
}

// bf16 and f16 B (weights read as 16 bits): every path (small M with rows of B or dot
// products, packed tiles with one or several K blocks, vector tails) and batch strides.
TEST_P(MatmulTest, SixteenBitB) {
  const bool slow = GetParam() == "scalar";
  for (int bt : {TFC_K_BF16, TFC_K_F16}) {
    for (auto& s : kSizes) {
      for (int t = 0; t < 4; ++t) {
        check({1, s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0, -1, -1, -1, t == 1}, 1e-5, bt);
      }
    }
    for (int tb = 0; tb < 2; ++tb) {
      check({1, 1, slow ? 300 : 2304, 768, false, tb != 0, -1, -1, -1, false}, 1e-5, bt);
      check({1, 3, 77, 1100, false, tb != 0, -1, -1, -1, false}, 1e-5, bt);
      check({1, slow ? 17 : 70, slow ? 33 : 129, 1100, false, tb != 0, -1, -1, -1, false}, 1e-5,
            bt);
      check({3, 17, 33, 29, false, tb != 0, -1, -1, -1, false}, 1e-5, bt);
      check({4, 3, 70, 20, false, tb != 0, -1, 0, -1, true}, 1e-5, bt);   // broadcast B
      check({2, 40, 5, 64, true, tb != 0, 5, 3, 7, true}, 1e-5, bt);     // gaps
      check({3, 2, 33, 29, false, tb != 0, -1, -1, 0, false}, 1e-5, bt);  // one C
    }
  }
}

// B's matrices repeating over the batch (period_b: a weight per head [H, K, N] against
// [B, H, M, K] activations, the seed model's per-head products) on every path: the direct
// path with B or B^T (each head's B^T transposed as the items change heads), small M, the
// packed path with B packed per tile or up front, one C summed over the batch, 16-bit B.
TEST_P(MatmulTest, PeriodicB) {
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    for (auto& s : {std::array<int64_t, 3>{16, 8, 8}, std::array<int64_t, 3>{17, 8, 8},
                    std::array<int64_t, 3>{3, 33, 29}, std::array<int64_t, 3>{40, 70, 20},
                    std::array<int64_t, 3>{60, 20, 300}}) {
      check({256, s[0], s[1], s[2], ta, tb, -1, -1, -1, false, 4});  // [64, 4, M, K] @ [4, K, N]
      check({12, s[0], s[1], s[2], ta, tb, 3, 5, 2, true, 5});       // gaps; 12 % 5 != 0
      check({6, s[0], s[1], s[2], ta, tb, -1, -1, 0, false, 2});     // one C
      check({3, s[0], s[1], s[2], ta, tb, -1, -1, -1, true, 7});      // period > batch
      check({4, s[0], s[1], s[2], ta, tb, -1, 0, -1, false, 2});      // stride 0 wins
    }
  }
  for (int bt : {TFC_K_BF16, TFC_K_F16}) {
    for (int tb = 0; tb < 2; ++tb) {
      check({8, 3, 70, 20, false, tb != 0, -1, -1, -1, false, 2}, 1e-5, bt);
      check({6, 40, 70, 300, true, tb != 0, -1, -1, -1, true, 3}, 1e-5, bt);
    }
  }
}

TEST_P(MatmulTest, BadBType) {
  float a = 1, b = 1, c = 0;
  tfc_k_matmul_bx_f32(&a, &b, 3, &c, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0);
  EXPECT_NE(tfc_kernels_take_error(), nullptr);
  // A negative period is refused too, and C is left alone.
  tfc_k_matmul_bx_f32(&a, &b, TFC_K_F32, &c, 1, 1, 1, 1, 0, 0, 0, 1, -1, 0, 0);
  EXPECT_NE(tfc_kernels_take_error(), nullptr);
  EXPECT_EQ(c, 0.f);
  tfc_k_linear_ex_bx_f32(&a, &b, -1, nullptr, nullptr, &c, 1, 1, 1, 0, 0, 0.f);
  EXPECT_NE(tfc_kernels_take_error(), nullptr);
}

// The scalar widening of IEEE half (the scalar ISA's loads and the packed path's tails)
// against the CPU's own conversion, for every bit pattern.
__attribute__((target("f16c"))) float hw_f16(uint16_t h) { return _cvtsh_ss(h); }

TEST(SixteenBit, HalfWideningIsExact) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C";
  for (uint32_t h = 0; h < 65536; ++h) {
    const float a = tfc_kern::f16_to_f32((uint16_t)h), b = hw_f16((uint16_t)h);
    uint32_t ua, ub;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    ASSERT_EQ(ua, ub) << "half bits 0x" << std::hex << h;
  }
}

TEST_P(MatmulTest, ZeroK) {
  std::vector<float> C(6, 3.f);
  tfc_k_matmul_f32(nullptr, nullptr, C.data(), 1, 2, 3, 0, 0, 0, 0, 0, 0, 0);
  for (float x : C) EXPECT_EQ(x, 0.f);
  std::fill(C.begin(), C.end(), 3.f);
  tfc_k_matmul_f32(nullptr, nullptr, C.data(), 1, 2, 3, 0, 0, 0, 0, 0, 0, 1);
  for (float x : C) EXPECT_EQ(x, 3.f);
}

TEST_P(MatmulTest, Linear) {
  TFC_SEED_TRACE(run_seed());
  std::mt19937_64 rng(run_seed() + 17);
  for (auto& s : {std::array<int64_t, 3>{1, 2304, 768}, std::array<int64_t, 3>{17, 65, 33},
                  std::array<int64_t, 3>{4, 129, 300}, std::array<int64_t, 3>{33, 47, 513},
                  std::array<int64_t, 3>{20, 24, 16}}) {
    for (int tw = 0; tw < 2; ++tw) {
      for (int with_bias = 0; with_bias < 2; ++with_bias) {
        const int64_t M = s[0], N = s[1], K = s[2];
        SCOPED_TRACE(::testing::Message() << "m=" << M << " n=" << N << " k=" << K << " tw=" << tw
                                          << " bias=" << with_bias);
        auto x = random_vec(rng, (size_t)(M * K)), w = random_vec(rng, (size_t)(K * N)),
             bias = random_vec(rng, (size_t)N);
        std::vector<double> ref((size_t)(M * N));
        for (int64_t i = 0; i < M; ++i) {
          for (int64_t j = 0; j < N; ++j) {
            double acc = with_bias ? bias[j] : 0.0;
            for (int64_t p = 0; p < K; ++p) {
              acc += (double)x[i * K + p] * (tw ? w[j * K + p] : w[p * N + j]);
            }
            ref[i * N + j] = acc;
          }
        }
        std::vector<float> y((size_t)(M * N), 7.f);
        tfc_k_linear_f32(x.data(), w.data(), with_bias ? bias.data() : nullptr, y.data(), M, N,
                         K, tw);
        EXPECT_LE(rel_max_err(y.data(), ref.data(), y.size()), 1e-5);
        ThreadHost host(2);
        std::vector<float> yp((size_t)(M * N), 9.f);
        {
          ScopedHost sh(host.api());
          tfc_k_linear_f32(x.data(), w.data(), with_bias ? bias.data() : nullptr, yp.data(), M,
                           N, K, tw);
        }
        EXPECT_EQ(memcmp(y.data(), yp.data(), y.size() * sizeof(float)), 0);
      }
    }
  }
}

TEST_P(MatmulTest, UsesHostForLargeProducts) {
  ThreadHost host(2);
  std::mt19937_64 rng(run_seed());
  auto A = random_vec(rng, 256 * 256), B = random_vec(rng, 256 * 256);
  std::vector<float> C(256 * 256);
  ScopedHost sh(host.api());
  tfc_k_matmul_f32(A.data(), B.data(), C.data(), 1, 256, 256, 256, 0, 0, 0, 0, 0, 0);
  EXPECT_GE(host.calls(), 1);
}

// The comparator every kernel test relies on: a NaN or a stray infinity must fail any
// tolerance wherever it sits, also when finite elements follow it (the matmul checks end
// with an untouched, finite canary element, which once reset a NaN's error to 0).
TEST(RelMaxErr, NaNAndInfinitiesFailWherever) {
  const double inf = std::numeric_limits<double>::infinity();
  const double want[3] = {1, 2, 3};
  const float exact[3] = {1, 2, 3};
  EXPECT_EQ(rel_max_err(exact, want, 3), 0.0);
  const float nanMiddle[3] = {1, NAN, 3};
  EXPECT_EQ(rel_max_err(nanMiddle, want, 3), inf);
  const float nanFirst[3] = {NAN, 2, 3};
  EXPECT_EQ(rel_max_err(nanFirst, want, 3), inf);
  const float infLast[3] = {1, 2, INFINITY};
  EXPECT_EQ(rel_max_err(infLast, want, 3), inf);
  const double wantNan[3] = {1, NAN, 3};
  EXPECT_EQ(rel_max_err(exact, wantNan, 3), inf);
  // Matching infinities are equal; opposite ones are not.
  const double wantInf[3] = {1, inf, 3};
  const float gotInf[3] = {1, INFINITY, 3};
  const float gotMinusInf[3] = {1, -INFINITY, 3};
  EXPECT_EQ(rel_max_err(gotInf, wantInf, 3), 0.0);
  EXPECT_EQ(rel_max_err(gotMinusInf, wantInf, 3), inf);
  // Relative to the largest reference magnitude.
  const float off[3] = {1, 2.5f, 3};
  EXPECT_DOUBLE_EQ(rel_max_err(off, want, 3), 0.5 / 3.0);
  EXPECT_FALSE(rel_max_err(nanMiddle, want, 3) <= 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Isa, MatmulTest, ::testing::ValuesIn(available_isas()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace tfc_kern_test
