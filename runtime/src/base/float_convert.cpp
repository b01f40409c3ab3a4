#include "base/float_convert.hpp"

#include <cstdint>
#include <cstring>

namespace tfc::internal {
namespace {

// Element loads and stores through memcpy: the checkpoint's bytes may be aligned to less
// than their element size, and memcpy of a constant size compiles to a plain move.
template <typename T>
T load(const unsigned char* bytes, size_t index) {
  T value;
  std::memcpy(&value, bytes + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void store(unsigned char* bytes, size_t index, T value) {
  std::memcpy(bytes + index * sizeof(T), &value, sizeof(T));
}

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

// |condition| ? |a| : |b| without a branch: GCC turns chained ?: into jumps, which stop the
// loops from vectorizing.
inline uint32_t select(bool condition, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(condition);
  return (a & mask) | (b & ~mask);
}

// BF16 is the upper half of an F32.
inline uint32_t bf16ToF32Bits(uint16_t h) { return static_cast<uint32_t>(h) << 16; }

// F16 -> F32, exact. Normals rebias the exponent (127 - 15 = 112); subnormals (exponent 0,
// zero included) are m * 2^-24, exact in F32 since m < 2^10; infinities and NaNs keep their
// payload under an all-ones exponent.
inline uint32_t f16ToF32Bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t magnitude = h & 0x7FFFu;
  const uint32_t normal = (magnitude << 13) + (112u << 23);
  const uint32_t special = (magnitude << 13) | 0x7F800000u;
  const uint32_t subnormal = floatBits(static_cast<float>(static_cast<int32_t>(magnitude)) *
                                       0x1p-24f);
  const uint32_t bits =
      select(magnitude >= 0x7C00u, special, select(magnitude >= 0x0400u, normal, subnormal));
  return sign | bits;
}

// F32 -> BF16, round to nearest even: adding 0x7FFF plus the lowest kept bit carries into
// the kept half exactly when the dropped half is above the tie, or at it with an odd kept
// half; an overflow carries into the exponent and gives infinity. NaNs are quieted instead
// (the addition could carry a NaN's payload into infinity).
inline uint16_t f32BitsToBf16(uint32_t x) {
  const uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  const uint32_t quietNan = (x >> 16) | 0x40u;
  return static_cast<uint16_t>(select((x & 0x7FFFFFFFu) > 0x7F800000u, quietNan, rounded));
}

// F32 -> F16, round to nearest even (after F. Giesen's float_to_half_fast3_rtne):
//   - at or above 2^16 (or infinity or NaN): infinity, or a quiet NaN;
//   - below 2^-14, a subnormal half or zero: adding 0.5 (2^-1) makes the F32 adder round
//     the value to a multiple of 2^-24, nearest even, which then sits in the low mantissa
//     bits (the default rounding mode, to nearest even, is assumed as everywhere);
//   - otherwise rebias and round the 13 dropped bits as f32BitsToBf16 does; values from
//     65520 up carry into the exponent and become infinity.
inline uint16_t f32BitsToF16(uint32_t x) {
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t magnitude = x & 0x7FFFFFFFu;
  const uint32_t special = select(magnitude > 0x7F800000u, 0x7E00u, 0x7C00u);
  const uint32_t subnormal = floatBits(bitsFloat(magnitude) + 0.5f) - floatBits(0.5f);
  const uint32_t normal =
      (magnitude + (static_cast<uint32_t>(15 - 127) << 23) + 0xFFFu + ((magnitude >> 13) & 1u)) >>
      13;
  const uint32_t bits =
      select(magnitude >= (143u << 23), special, select(magnitude < (113u << 23), subnormal, normal));
  return static_cast<uint16_t>(sign | bits);
}

template <typename Source, typename Destination, typename Convert>
void convertLoop(const void* source, void* destination, size_t count, Convert convert) {
  const auto* in = static_cast<const unsigned char*>(source);
  auto* out = static_cast<unsigned char*>(destination);
  for (size_t i = 0; i < count; ++i) {
    store<Destination>(out, i, convert(load<Source>(in, i)));
  }
}

bool isFloat(tfc_dtype_t dtype) {
  return dtype == TFC_DTYPE_F32 || dtype == TFC_DTYPE_BF16 || dtype == TFC_DTYPE_F16;
}

}  // namespace

bool isConvertibleFloat(tfc_dtype_t from, tfc_dtype_t to) { return isFloat(from) && isFloat(to); }

bool convertFloats(tfc_dtype_t from, const void* source, tfc_dtype_t to, void* destination,
                   size_t count) {
  if (!isConvertibleFloat(from, to)) return false;
  if (from == to) {
    if (count > 0) std::memcpy(destination, source, count * tfc_dtype_size(from));
    return true;
  }
  switch (from) {
    case TFC_DTYPE_BF16:
      if (to == TFC_DTYPE_F32) {
        convertLoop<uint16_t, uint32_t>(source, destination, count, bf16ToF32Bits);
      } else {
        convertLoop<uint16_t, uint16_t>(source, destination, count,
                                        [](uint16_t h) { return f32BitsToF16(bf16ToF32Bits(h)); });
      }
      return true;
    case TFC_DTYPE_F16:
      if (to == TFC_DTYPE_F32) {
        convertLoop<uint16_t, uint32_t>(source, destination, count, f16ToF32Bits);
      } else {
        convertLoop<uint16_t, uint16_t>(source, destination, count,
                                        [](uint16_t h) { return f32BitsToBf16(f16ToF32Bits(h)); });
      }
      return true;
    default:  // F32
      if (to == TFC_DTYPE_BF16) {
        convertLoop<uint32_t, uint16_t>(source, destination, count, f32BitsToBf16);
      } else {
        convertLoop<uint32_t, uint16_t>(source, destination, count, f32BitsToF16);
      }
      return true;
  }
}

}  // namespace tfc::internal
