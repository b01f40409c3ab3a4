// __truncsfbf2 (src/bf16_libcall.cpp), the f32 -> bf16 rounding LLVM calls on CPUs without
// AVX512-BF16, against the nearest bf16 chosen in double arithmetic (ties to the even one):
// ties, carries into the exponent, overflow to infinity, subnormals, signed zeros, NaN, and
// random floats of every exponent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

extern "C" _Float16 __truncsfbf2(float x);

namespace {

uint16_t viaLibcall(float x) {
  _Float16 h = __truncsfbf2(x);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

float fromBits32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

double bf16Value(uint16_t bits) {
  return static_cast<double>(fromBits32(static_cast<uint32_t>(bits) << 16));
}

// The bf16 nearest to a finite |x|: of the two bf16 values around it, the closer, the even
// one on a tie; past the largest finite bf16 by half an ulp or more, infinity.
uint16_t nearest(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint16_t below = static_cast<uint16_t>(u >> 16);  // toward zero
  const uint16_t above = static_cast<uint16_t>(below + 1);
  const double d = std::fabs(static_cast<double>(x));
  const double lo = std::fabs(bf16Value(below));
  // above's magnitude: the next bf16 away from zero (0x7f80, infinity, past the largest
  // finite one: its value counts as 2^128 for the comparison).
  const double hi = (above & 0x7fff) == 0x7f80 ? std::ldexp(1.0, 128) : std::fabs(bf16Value(above));
  if (d - lo < hi - d) return below;
  if (d - lo > hi - d) return above;
  return (below & 1) == 0 ? below : above;
}

TEST(Bf16Libcall, EdgeCases) {
  EXPECT_EQ(viaLibcall(1.0f), 0x3f80);
  EXPECT_EQ(viaLibcall(fromBits32(0x3f808000u)), 0x3f80);  // tie, even below
  EXPECT_EQ(viaLibcall(fromBits32(0x3f818000u)), 0x3f82);  // tie, even above
  EXPECT_EQ(viaLibcall(fromBits32(0x3f80ffffu)), 0x3f81);
  EXPECT_EQ(viaLibcall(fromBits32(0x3fffffffu)), 0x4000);  // carry into the exponent
  EXPECT_EQ(viaLibcall(fromBits32(0x7f7fffffu)), 0x7f80);  // overflow to infinity
  EXPECT_EQ(viaLibcall(INFINITY), 0x7f80);
  EXPECT_EQ(viaLibcall(-INFINITY), 0xff80);
  EXPECT_EQ(viaLibcall(0.0f), 0x0000);
  EXPECT_EQ(viaLibcall(-0.0f), 0x8000);
  EXPECT_EQ(viaLibcall(fromBits32(0x00018000u)), 0x0002);  // a subnormal tie, to even
  // NaNs stay NaN, quiet, with their sign; a signaling NaN whose payload lies in the low
  // half only would otherwise become infinity.
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fa00000u}) {
    const uint16_t bits = viaLibcall(fromBits32(nan));
    EXPECT_EQ(bits & 0x7f80, 0x7f80) << std::hex << nan;
    EXPECT_NE(bits & 0x0040, 0) << std::hex << nan;
    EXPECT_EQ(bits & 0x8000, (nan >> 16) & 0x8000) << std::hex << nan;
  }
}

TEST(Bf16Libcall, RandomFloatsRoundToNearestEven) {
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 200000; ++i) {
    const uint32_t u = static_cast<uint32_t>(rng());
    const float x = fromBits32(u);
    if (std::isnan(x) || std::isinf(x)) continue;
    const uint16_t want = nearest(x);
    ASSERT_EQ(viaLibcall(x), want) << "bits 0x" << std::hex << u;
  }
}

}  // namespace
