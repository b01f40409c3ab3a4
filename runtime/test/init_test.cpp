// Tests of initializer specs: the grammar (same as the compiler's verifier), the statistics
// of normal and uniform fills, orthogonality, determinism by seed, and half conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "fake_artifacts.hpp"
#include "core/init.hpp"
#include "test_util.hpp"
#include "tfc/runtime/runtime.hpp"

namespace tfc::internal {
namespace {

using ::tfc::testing::isError;

TEST(InitSpecTest, ParsesTheGrammar) {
  auto zeros = parseInitSpec("zeros", TFC_DTYPE_F32, {4});
  ASSERT_OK(zeros);
  EXPECT_EQ(zeros->kind, InitSpec::Kind::kZeros);
  auto ones = parseInitSpec("  ones ", TFC_DTYPE_I32, {4});
  ASSERT_OK(ones);
  EXPECT_EQ(ones->kind, InitSpec::Kind::kOnes);
  auto constant = parseInitSpec("constant(-2.5)", TFC_DTYPE_F32, {});
  ASSERT_OK(constant);
  EXPECT_EQ(constant->a, -2.5);
  auto normal = parseInitSpec("normal(0.0, 0.02)", TFC_DTYPE_BF16, {3, 3});
  ASSERT_OK(normal);
  EXPECT_EQ(normal->kind, InitSpec::Kind::kNormal);
  EXPECT_EQ(normal->b, 0.02);
  auto uniform = parseInitSpec("uniform( -1e-2 , 1e-2 )", TFC_DTYPE_F32, {3});
  ASSERT_OK(uniform);
  EXPECT_EQ(uniform->a, -1e-2);
  auto orthogonal = parseInitSpec("orthogonal(1.0)", TFC_DTYPE_F32, {3, 3});
  ASSERT_OK(orthogonal);
  EXPECT_EQ(orthogonal->kind, InitSpec::Kind::kOrthogonal);
}

TEST(InitSpecTest, RefusesWhatTheCompilerRefuses) {
  struct Case {
    const char* spec;
    tfc_dtype_t dtype;
    std::vector<int64_t> shape;
    const char* keyword;
  };
  for (const Case& c : std::vector<Case>{
           {"glorot", TFC_DTYPE_F32, {2}, "is not one of zeros, ones"},
           {"xavier(1.0)", TFC_DTYPE_F32, {2}, "unknown initializer 'xavier'"},
           {"normal(0.0)", TFC_DTYPE_F32, {2}, "takes 2 argument(s), got 1"},
           {"constant()", TFC_DTYPE_F32, {2}, "argument '' is not a number"},
           {"constant(abc)", TFC_DTYPE_F32, {2}, "argument 'abc' is not a number"},
           {"constant(inf)", TFC_DTYPE_F32, {2}, "is not finite"},
           {"normal(0.0, -1.0)", TFC_DTYPE_F32, {2}, "needs std >= 0"},
           {"uniform(1.0, 0.0)", TFC_DTYPE_F32, {2}, "needs lo <= hi"},
           {"orthogonal(1.0)", TFC_DTYPE_F32, {4}, "rank >= 2, got rank 1"},
           {"normal(0.0, 1.0)", TFC_DTYPE_I32, {4}, "needs a float tensor, got I32"},
       }) {
    auto spec = parseInitSpec(c.spec, c.dtype, c.shape);
    ASSERT_FALSE(spec.ok()) << c.spec;
    EXPECT_TRUE(isError(spec.status(), TFC_INVALID_ARGUMENT, "", c.keyword)) << c.spec;
  }
}

std::vector<float> fill(const char* text, std::vector<int64_t> shape, uint64_t seed) {
  auto spec = parseInitSpec(text, TFC_DTYPE_F32, shape);
  EXPECT_OK(spec);
  size_t count = 1;
  for (int64_t d : shape) count *= static_cast<size_t>(d);
  std::vector<float> values(count);
  EXPECT_OK(fillInit(*spec, TFC_DTYPE_F32, shape, seed, values.data()));
  return values;
}

void meanAndStd(const std::vector<float>& values, double* mean, double* stddev) {
  double sum = 0, squares = 0;
  for (float v : values) sum += v;
  *mean = sum / static_cast<double>(values.size());
  for (float v : values) squares += (v - *mean) * (v - *mean);
  *stddev = std::sqrt(squares / static_cast<double>(values.size()));
}

TEST(InitFillTest, ConstantsFill) {
  EXPECT_EQ(fill("zeros", {3}, 1), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(fill("ones", {3}, 1), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(fill("constant(0.5)", {2}, 1), (std::vector<float>{0.5f, 0.5f}));
  auto spec = parseInitSpec("constant(7)", TFC_DTYPE_I64, {2});
  ASSERT_OK(spec);
  int64_t values[2] = {0, 0};
  ASSERT_OK(fillInit(*spec, TFC_DTYPE_I64, {2}, 0, values));
  EXPECT_EQ(values[0], 7);
  EXPECT_EQ(values[1], 7);
}

TEST(InitFillTest, NormalHasTheRequestedMeanAndStd) {
  std::vector<float> values = fill("normal(0.5, 2.0)", {400, 250}, 123);
  double mean = 0, stddev = 0;
  meanAndStd(values, &mean, &stddev);
  // 100000 samples: the standard error of the mean is 2/sqrt(1e5) = 0.0063.
  EXPECT_NEAR(mean, 0.5, 0.03);
  EXPECT_NEAR(stddev, 2.0, 0.03);
  size_t within1 = 0;
  for (float v : values) within1 += std::fabs(v - 0.5) < 2.0;
  EXPECT_NEAR(static_cast<double>(within1) / values.size(), 0.6827, 0.01);
}

TEST(InitFillTest, UniformStaysInRangeWithTheRightMoments) {
  std::vector<float> values = fill("uniform(-1.0, 3.0)", {100000}, 9);
  for (float v : values) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LE(v, 3.0f);
  }
  double mean = 0, stddev = 0;
  meanAndStd(values, &mean, &stddev);
  EXPECT_NEAR(mean, 1.0, 0.02);
  EXPECT_NEAR(stddev, 4.0 / std::sqrt(12.0), 0.02);
}

// Max |G - gain^2 I| where G is W W^T (rows <= cols) or W^T W.
double orthogonalityError(const std::vector<float>& w, size_t rows, size_t cols, double gain) {
  bool byRows = rows <= cols;
  size_t k = byRows ? rows : cols;
  double worst = 0;
  for (size_t a = 0; a < k; ++a) {
    for (size_t b = 0; b < k; ++b) {
      double dot = 0;
      if (byRows) {
        for (size_t j = 0; j < cols; ++j) dot += double(w[a * cols + j]) * w[b * cols + j];
      } else {
        for (size_t i = 0; i < rows; ++i) dot += double(w[i * cols + a]) * w[i * cols + b];
      }
      worst = std::max(worst, std::fabs(dot - (a == b ? gain * gain : 0.0)));
    }
  }
  return worst;
}

TEST(InitFillTest, OrthogonalIsOrthogonal) {
  EXPECT_LT(orthogonalityError(fill("orthogonal(1.0)", {64, 64}, 1), 64, 64, 1.0), 1e-5);
  EXPECT_LT(orthogonalityError(fill("orthogonal(1.0)", {32, 128}, 2), 32, 128, 1.0), 1e-5);
  EXPECT_LT(orthogonalityError(fill("orthogonal(1.0)", {128, 32}, 3), 128, 32, 1.0), 1e-5);
  EXPECT_LT(orthogonalityError(fill("orthogonal(1.0)", {12, 32}, 4), 12, 32, 1.0), 1e-5);
  // Rank 3 is viewed as shape[0] x the rest.
  EXPECT_LT(orthogonalityError(fill("orthogonal(1.0)", {4, 8, 8}, 5), 4, 64, 1.0), 1e-5);
  EXPECT_LT(orthogonalityError(fill("orthogonal(2.0)", {16, 16}, 6), 16, 16, 2.0), 4e-5);
  // Not a permutation or the identity: entries are spread out.
  std::vector<float> w = fill("orthogonal(1.0)", {64, 64}, 1);
  double mean = 0, stddev = 0;
  meanAndStd(w, &mean, &stddev);
  EXPECT_NEAR(stddev, 1.0 / 8.0, 0.01);
}

TEST(InitFillTest, DeterministicBySeedAndIndex) {
  EXPECT_EQ(fill("normal(0.0, 1.0)", {64}, 7), fill("normal(0.0, 1.0)", {64}, 7));
  EXPECT_NE(fill("normal(0.0, 1.0)", {64}, 7), fill("normal(0.0, 1.0)", {64}, 8));
  EXPECT_EQ(initStreamSeed(1, 2), initStreamSeed(1, 2));
  EXPECT_NE(initStreamSeed(1, 2), initStreamSeed(1, 3));
  EXPECT_NE(initStreamSeed(1, 2), initStreamSeed(2, 2));
  EXPECT_NE(initStreamSeed(0, 1), initStreamSeed(1, 0));
}

TEST(InitFillTest, ParamsInitIsDeterministicBySeed) {
  auto artifact = Artifact::open(::tfc::testing::fakeArtifact("fake_model"));
  ASSERT_OK(artifact);
  auto snapshot = [&](uint64_t seed) {
    auto params = Params::create(*artifact);
    EXPECT_OK(params);
    EXPECT_OK(params->init(seed));
    std::vector<std::vector<uint8_t>> bytes;
    for (int32_t i = 0; i < artifact->paramCount(); ++i) {
      auto ref = params->tensor(i);
      const auto* data = static_cast<const uint8_t*>(ref->data);
      bytes.emplace_back(data, data + ref->byte_size);
    }
    return bytes;
  };
  auto a = snapshot(5), b = snapshot(5), c = snapshot(6);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a[0], c[0]);  // ones
  EXPECT_NE(a[2], c[2]);  // orthogonal
  EXPECT_NE(a[3], c[3]);  // normal
  auto params = Params::create(*artifact);
  ASSERT_OK(params);
  ASSERT_OK(params->init(5));
  auto proj = params->tensor(2);
  ASSERT_OK(proj);
  const float* w = static_cast<const float*>(proj->data);
  EXPECT_LT(orthogonalityError(std::vector<float>(w, w + 16), 4, 4, 1.0), 1e-5);
}

TEST(HalfTest, ConvertsWithRoundToNearestEven) {
  EXPECT_EQ(tfc_f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(tfc_f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(tfc_f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(tfc_f32_to_f16(65520.0f), 0x7C00);  // rounds to infinity
  EXPECT_EQ(tfc_f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(tfc_f32_to_f16(std::ldexp(1.0f, -26)), 0x0000);  // below half of it
  EXPECT_EQ(tfc_f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie to even
  EXPECT_EQ(tfc_f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(tfc_f32_to_f16(0.0f), 0x0000);
  EXPECT_TRUE(std::isnan(halfToFloat(tfc_f32_to_f16(NAN))));
  for (float v : {0.1f, -3.75f, 1000.0f, 6.1e-5f, 1e-6f}) {
    EXPECT_NEAR(halfToFloat(tfc_f32_to_f16(v)), v, std::fabs(v) * 1e-3 + 6e-8) << v;
  }
  EXPECT_EQ(tfc_f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(tfc_f32_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(bfloat16ToFloat(tfc_f32_to_bf16(3.140625f)), 3.140625f);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(tfc_f32_to_bf16(NAN))));
}

}  // namespace
}  // namespace tfc::internal
