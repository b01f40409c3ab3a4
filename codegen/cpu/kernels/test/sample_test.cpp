// tfc_k_sample_f32 and tfc_k_uniform.
#include <gtest/gtest.h>
#include <math.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <set>

#include "internal.h"
#include "test_util.h"

namespace tfc_kern_test {
namespace {

// Reference distribution: softmax(x / T), restricted to the top_k largest, then to the
// smallest prefix by descending probability reaching top_p, renormalized.
std::vector<double> reference_probs(const std::vector<float>& x, float T, int top_k,
                                    float top_p) {
  const size_t V = x.size();
  std::vector<int> idx(V);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return x[a] > x[b]; });
  size_t k = (top_k <= 0 || (size_t)top_k >= V) ? V : (size_t)top_k;
  double mx = x[idx[0]];
  std::vector<double> w(V, 0.0);
  double mass = 0;
  for (size_t i = 0; i < k; ++i) mass += (w[idx[i]] = exp(((double)x[idx[i]] - mx) / T));
  if (top_p < 1.f) {
    double cum = 0;
    size_t n = 0;
    while (n < k) {
      cum += w[idx[n]];
      ++n;
      if (cum >= top_p * mass) break;
    }
    for (size_t i = n; i < k; ++i) w[idx[i]] = 0;
    mass = cum;
  }
  for (auto& p : w) p /= mass;
  return w;
}

class SampleTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(tfc_kernels_internal_set_isa(GetParam().c_str())); }
  void TearDown() override { tfc_kernels_internal_set_isa(nullptr); }
};

TEST_P(SampleTest, GreedyIsFirstArgmax) {
  TFC_SEED_TRACE(run_seed());
  std::mt19937_64 rng(run_seed());
  for (int64_t V : {1, 2, 17, 1000, 50257}) {
    const int64_t B = 3;
    auto x = random_vec(rng, (size_t)(B * V), -5.f, 5.f);
    if (V > 3) {
      x[(size_t)(V - 1)] = 9.f;  // row 0: a tie between V-2 and V-1 ...
      x[(size_t)(V - 2)] = 9.f;  // ... the first wins
    }
    std::vector<int32_t> ids(B, -1);
    for (float T : {0.f, -1.f}) {
      tfc_k_sample_f32(x.data(), B, V, T, 0, 1.f, 123, ids.data());
      for (int64_t b = 0; b < B; ++b) {
        const float* row = &x[(size_t)(b * V)];
        int64_t am = std::max_element(row, row + V) - row;
        EXPECT_EQ(ids[b], am) << "V=" << V << " b=" << b;
      }
    }
    // top_k = 1 is greedy at any temperature
    std::vector<int32_t> ids1(B, -1);
    tfc_k_sample_f32(x.data(), B, V, 1.3f, 1, 1.f, 99, ids1.data());
    EXPECT_EQ(ids1, ids);
  }
}

TEST_P(SampleTest, SeedsAreReproducibleAndDistinct) {
  std::mt19937_64 rng(run_seed());
  const int64_t B = 64, V = 500;
  auto x = random_vec(rng, (size_t)(B * V), -1.f, 1.f);
  for (auto cfg : {std::make_pair(0, 1.f), std::make_pair(50, 1.f), std::make_pair(0, 0.9f),
                   std::make_pair(40, 0.8f)}) {
    std::vector<int32_t> a(B), b(B), c(B);
    tfc_k_sample_f32(x.data(), B, V, 1.f, cfg.first, cfg.second, 42, a.data());
    tfc_k_sample_f32(x.data(), B, V, 1.f, cfg.first, cfg.second, 42, b.data());
    tfc_k_sample_f32(x.data(), B, V, 1.f, cfg.first, cfg.second, 43, c.data());
    EXPECT_EQ(a, b);
    int differ = 0;
    for (int64_t i = 0; i < B; ++i) differ += a[i] != c[i];
    EXPECT_GT(differ, B / 2) << "seeds 42 and 43 give nearly the same draws";
    // Thread-count independent.
    ThreadHost host(3);
    std::vector<int32_t> p(B);
    {
      ScopedHost sh(host.api());
      tfc_k_sample_f32(x.data(), B, V, 1.f, cfg.first, cfg.second, 42, p.data());
    }
    EXPECT_EQ(a, p);
  }
}

// Chi-square of 20000 draws (10000 rows of one call + 10000 seeds) against the reference.
void check_distribution(const std::vector<float>& x, float T, int top_k, float top_p) {
  SCOPED_TRACE(::testing::Message() << "T=" << T << " top_k=" << top_k << " top_p=" << top_p);
  const int64_t V = (int64_t)x.size();
  auto p = reference_probs(x, T, top_k, top_p);
  std::vector<int64_t> counts((size_t)V, 0);
  const int64_t B = 10000;
  std::vector<float> rows;
  for (int64_t b = 0; b < B; ++b) rows.insert(rows.end(), x.begin(), x.end());
  std::vector<int32_t> ids(B);
  const int64_t seed0 = (int64_t)run_seed();
  tfc_k_sample_f32(rows.data(), B, V, T, top_k, top_p, seed0, ids.data());
  for (int32_t id : ids) {
    ASSERT_TRUE(id >= 0 && id < V);
    counts[(size_t)id]++;
  }
  for (int64_t s = 0; s < 10000; ++s) {
    int32_t id = -1;
    tfc_k_sample_f32(x.data(), 1, V, T, top_k, top_p, seed0 + 1 + s, &id);
    ASSERT_TRUE(id >= 0 && id < V);
    counts[(size_t)id]++;
  }
  const double n = 20000;
  double chi2 = 0;
  int df = -1;
  for (int64_t i = 0; i < V; ++i) {
    if (p[(size_t)i] == 0) {
      EXPECT_EQ(counts[(size_t)i], 0) << "token " << i << " is outside the kept set";
      continue;
    }
    const double e = n * p[(size_t)i];
    chi2 += (counts[(size_t)i] - e) * (counts[(size_t)i] - e) / e;
    ++df;
  }
  // p < ~1e-6 bound for the chi-square with df degrees of freedom
  const double bound = df + 8.0 * sqrt(2.0 * std::max(df, 1)) + 10.0;
  EXPECT_LT(chi2, bound) << "df=" << df;
}

TEST_P(SampleTest, DistributionMatchesSoftmax) {
  TFC_SEED_TRACE(run_seed());
  std::mt19937_64 rng(run_seed() + 5);
  auto x = random_vec(rng, 12, -2.f, 2.f);
  check_distribution(x, 1.f, 0, 1.f);
  check_distribution(x, 0.7f, 0, 1.f);
  check_distribution(x, 1.f, 5, 1.f);
  check_distribution(x, 1.f, 0, 0.7f);
  check_distribution(x, 1.5f, 8, 0.6f);
  check_distribution(x, 1.f, 0, 0.f);  // top_p = 0 keeps the single most likely token
}

TEST_P(SampleTest, TopPOverLargeVocabulary) {
  TFC_SEED_TRACE(run_seed());
  std::mt19937_64 rng(run_seed() + 9);
  // A peaked distribution: the top-p prefix is a few dozen tokens out of 3000, found by
  // the candidate-growing search.
  auto x = random_vec(rng, 3000, -3.f, 3.f);
  for (int i = 0; i < 40; ++i) x[(size_t)(i * 71)] = 8.f + 0.05f * i;
  check_distribution(x, 1.f, 0, 0.8f);
  check_distribution(x, 1.f, 200, 0.95f);
}

TEST_P(SampleTest, LargeVocabularyIsFast) {
  std::mt19937_64 rng(run_seed());
  const int64_t V = 152064, B = 4;
  auto x = random_vec(rng, (size_t)(B * V), -10.f, 10.f);
  std::vector<int32_t> ids(B);
  auto t0 = std::chrono::steady_clock::now();
  int calls = 0;
  for (auto cfg : {std::make_pair(0, 1.f), std::make_pair(50, 1.f), std::make_pair(0, 0.9f),
                   std::make_pair(40, 0.95f)}) {
    tfc_k_sample_f32(x.data(), B, V, 0.8f, cfg.first, cfg.second, 7, ids.data());
    ++calls;
    for (int64_t b = 0; b < B; ++b) ASSERT_TRUE(ids[b] >= 0 && ids[b] < V);
    if (cfg.first > 0) {
      // the id is among the top_k largest of its row
      const float* row = x.data();  // row 0
      std::vector<float> r(row, row + V);
      std::nth_element(r.begin(), r.begin() + (cfg.first - 1), r.end(), std::greater<float>());
      EXPECT_GE(x[(size_t)ids[0]], r[(size_t)(cfg.first - 1)]);
    }
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("ms_per_row", std::to_string(ms / (calls * B)));
  EXPECT_LT(ms / (calls * B), 50.0) << "sampling a 152k vocabulary row takes " << ms / (calls * B)
                                    << " ms";
}

TEST_P(SampleTest, NanLogitsAreAnError) {
  std::vector<float> x = {1.f, 2.f, 3.f, 4.f, 1.f, NAN, 3.f, 4.f};
  std::vector<int32_t> ids(2, -1);
  tfc_kernels_set_host(nullptr);
  tfc_k_sample_f32(x.data(), 2, 4, 1.f, 0, 1.f, 1, ids.data());
  const char* err = tfc_kernels_take_error();
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("row 1"), std::string::npos) << err;
  EXPECT_EQ(tfc_kernels_take_error(), nullptr);
}

TEST(Uniform, RangeDeterminismAndMoments) {
  double sum = 0, sum2 = 0;
  std::set<float> distinct;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    float u = tfc_k_uniform(1234, i);
    ASSERT_GE(u, 0.f);
    ASSERT_LT(u, 1.f);
    ASSERT_EQ(u, tfc_k_uniform(1234, i));
    sum += u;
    sum2 += (double)u * u;
    if (i < 1000) distinct.insert(u);
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  EXPECT_NEAR(sum2 / n - (sum / n) * (sum / n), 1.0 / 12, 0.002);
  EXPECT_GT(distinct.size(), 990u);
  EXPECT_NE(tfc_k_uniform(1, 5), tfc_k_uniform(2, 5));
  EXPECT_NE(tfc_k_uniform(-1, 0), tfc_k_uniform(0, 0));
}

INSTANTIATE_TEST_SUITE_P(Isa, SampleTest, ::testing::ValuesIn(available_isas()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace tfc_kern_test
