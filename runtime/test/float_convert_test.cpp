// Tests the conversions between F32, BF16 and F16 that tfc_params_load_pretrained applies,
// against the references of float_reference.hpp. Every 16-bit pattern is widened;
// narrowing runs over edge cases and random bit patterns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "base/float_convert.hpp"
#include "float_reference.hpp"
#include "test_util.hpp"

namespace tfc::internal {
namespace {

using namespace tfc::testing::reference;

template <typename T>
std::vector<T> convert(tfc_dtype_t from, const void* source, tfc_dtype_t to, size_t count) {
  // One byte off alignment on both sides, as in a checkpoint that packed tensors tightly.
  std::vector<uint8_t> out(count * sizeof(T) + 1);
  std::vector<uint8_t> in(count * tfc_dtype_size(from) + 1);
  std::memcpy(in.data() + 1, source, count * tfc_dtype_size(from));
  EXPECT_TRUE(convertFloats(from, in.data() + 1, to, out.data() + 1, count));
  std::vector<T> result(count);
  std::memcpy(result.data(), out.data() + 1, count * sizeof(T));
  return result;
}

std::vector<uint16_t> every16BitPattern() {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  return all;
}

TEST(FloatConvertTest, Bf16AndF16WidenExactlyForEveryPattern) {
  std::vector<uint16_t> all = every16BitPattern();
  for (tfc_dtype_t from : {TFC_DTYPE_BF16, TFC_DTYPE_F16}) {
    std::vector<float> wide = convert<float>(from, all.data(), TFC_DTYPE_F32, all.size());
    for (uint32_t i = 0; i < 65536; ++i) {
      double expected = from == TFC_DTYPE_BF16 ? decodeBf16(all[i]) : decodeF16(all[i]);
      if (std::isnan(expected)) {
        ASSERT_TRUE(std::isnan(wide[i])) << tfc_dtype_name(from) << " " << i;
        ASSERT_EQ(std::signbit(wide[i]), (all[i] >> 15) != 0) << i;
      } else {
        // Exact, and -0 stays -0.
        ASSERT_EQ(static_cast<double>(wide[i]), expected) << tfc_dtype_name(from) << " " << i;
        ASSERT_EQ(std::signbit(wide[i]), std::signbit(expected)) << i;
      }
    }
  }
}

std::vector<float> narrowingCases(std::mt19937_64& engine) {
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f,
                               -65520.0f, 65536.0f, 1e10f, -1e38f, INFINITY, -INFINITY, NAN,
                               -NAN, 0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f,
                               0x1.ff8p-15f, 0x1.ffcp-15f, 1e-45f, -1e-40f, 3.4028235e38f,
                               1.00390625f /* BF16 tie, even low */, 1.01171875f /* odd */,
                               1.0f + 0x1p-11f /* F16 tie */, 1.0f + 0x3p-11f};
  // Around every F16 and BF16 value's rounding midpoints: a random F16 or BF16 value with a
  // tie or a near-tie below it.
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = any(engine);
    switch (i % 4) {
      case 0: break;                                            // anything
      case 1: bits = (bits & 0xFFFF0000u) | 0x8000u; break;     // BF16 ties
      case 2: bits = (bits & 0xFFFFE000u) | 0x1000u; break;     // F16 ties (normal range)
      default: bits = (bits & 0x87FFFFFFu) | 0x30000000u; break;  // 2^-31 .. 2^-16
    }
    values.push_back(fromBits(bits));
  }
  return values;
}

TEST(FloatConvertTest, F32NarrowsToNearestEvenWithNanKept) {
  testing::Random random;
  SCOPED_TRACE(random.trace());
  std::vector<float> values = narrowingCases(random.engine);
  std::vector<uint16_t> half = convert<uint16_t>(TFC_DTYPE_F32, values.data(), TFC_DTYPE_F16,
                                                 values.size());
  std::vector<uint16_t> brain = convert<uint16_t>(TFC_DTYPE_F32, values.data(), TFC_DTYPE_BF16,
                                                  values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    float value = values[i];
    SCOPED_TRACE(::testing::Message() << "value " << value << " bits 0x" << std::hex
                                      << bitsOf(value));
    if (std::isnan(value)) {
      ASSERT_TRUE(std::isnan(decodeF16(half[i])));
      ASSERT_TRUE(std::isnan(decodeBf16(brain[i])));
      continue;
    }
    ASSERT_EQ(half[i], referenceF32ToF16(value));
    ASSERT_EQ(brain[i], referenceF32ToBf16(value));
  }
}

// BF16 <-> F16 rounds once: as widening exactly, then narrowing.
TEST(FloatConvertTest, Bf16AndF16ConvertToEachOtherThroughF32) {
  std::vector<uint16_t> all = every16BitPattern();
  std::vector<uint16_t> toF16 = convert<uint16_t>(TFC_DTYPE_BF16, all.data(), TFC_DTYPE_F16,
                                                  all.size());
  std::vector<uint16_t> toBf16 = convert<uint16_t>(TFC_DTYPE_F16, all.data(), TFC_DTYPE_BF16,
                                                   all.size());
  for (uint32_t i = 0; i < 65536; ++i) {
    auto fromBf16 = static_cast<float>(decodeBf16(all[i]));
    auto fromF16 = static_cast<float>(decodeF16(all[i]));
    if (std::isnan(fromBf16)) {
      ASSERT_TRUE(std::isnan(decodeF16(toF16[i]))) << i;
    } else {
      ASSERT_EQ(toF16[i], referenceF32ToF16(fromBf16)) << i;
    }
    if (std::isnan(fromF16)) {
      ASSERT_TRUE(std::isnan(decodeBf16(toBf16[i]))) << i;
    } else {
      ASSERT_EQ(toBf16[i], referenceF32ToBf16(fromF16)) << i;
    }
  }
}

TEST(FloatConvertTest, OtherDtypesAreRefusedAndNothingWritten) {
  int64_t source = 7;
  uint32_t destination = 0xDEADBEEF;
  EXPECT_FALSE(convertFloats(TFC_DTYPE_I64, &source, TFC_DTYPE_F32, &destination, 1));
  EXPECT_FALSE(convertFloats(TFC_DTYPE_F32, &source, TFC_DTYPE_F64, &destination, 1));
  EXPECT_EQ(destination, 0xDEADBEEFu);
  EXPECT_TRUE(isConvertibleFloat(TFC_DTYPE_BF16, TFC_DTYPE_F16));
  EXPECT_FALSE(isConvertibleFloat(TFC_DTYPE_BOOL, TFC_DTYPE_F16));
}

}  // namespace
}  // namespace tfc::internal
