// Reference conversions between F32, BF16 and F16 for the tests, written differently from
// the runtime's (float_convert.cpp): widening decodes the fields with ldexp, narrowing to
// F16 goes through the compiler's _Float16 (soft-float, round to nearest even), narrowing to
// BF16 picks the nearer of the two neighbours in double arithmetic.
#ifndef TFC_RUNTIME_TEST_FLOAT_REFERENCE_HPP_
#define TFC_RUNTIME_TEST_FLOAT_REFERENCE_HPP_

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tfc::testing::reference {

inline float fromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

inline uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

// The value of the 16-bit float |h| with |exponentBits| and |mantissaBits| fields, from its
// definition.
inline double decode16(uint16_t h, int exponentBits, int mantissaBits) {
  const int bias = (1 << (exponentBits - 1)) - 1;
  const bool negative = (h >> 15) != 0;
  const int exponent = (h >> mantissaBits) & ((1 << exponentBits) - 1);
  const int mantissa = h & ((1 << mantissaBits) - 1);
  double magnitude;
  if (exponent == (1 << exponentBits) - 1) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - bias - mantissaBits);
  } else {
    magnitude = std::ldexp(static_cast<double>(mantissa + (1 << mantissaBits)),
                           exponent - bias - mantissaBits);
  }
  return negative ? -magnitude : magnitude;
}

inline double decodeF16(uint16_t h) { return decode16(h, 5, 10); }
inline double decodeBf16(uint16_t h) { return decode16(h, 8, 7); }

inline uint16_t referenceF32ToF16(float value) {
  auto half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, 2);
  return bits;
}

inline uint16_t referenceF32ToBf16(float value) {
  uint32_t bits = bitsOf(value);
  if (std::isnan(value)) return 0x7FC0;  // compared as "a NaN" only
  // The BF16 neighbours: truncation (towards zero) and the next one away from zero.
  auto low = static_cast<uint16_t>(bits >> 16);
  auto high = static_cast<uint16_t>(low + 1);
  double x = std::fabs(static_cast<double>(value));
  double lowValue = std::fabs(decodeBf16(low));
  // Past the largest finite value the next step is 2^128, where rounding overflows to
  // infinity.
  double highValue = (high & 0x7FFF) == 0x7F80 ? std::ldexp(1.0, 128) : std::fabs(decodeBf16(high));
  if ((bits & 0xFFFF) == 0) return low;
  double toLow = x - lowValue, toHigh = highValue - x;
  if (toLow < toHigh) return low;
  if (toHigh < toLow) return high;
  return (low & 1) ? high : low;
}

}  // namespace tfc::testing::reference

#endif  // TFC_RUNTIME_TEST_FLOAT_REFERENCE_HPP_
