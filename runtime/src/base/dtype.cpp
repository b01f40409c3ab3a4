#include "tfc/runtime/dtype.h"

#include <cmath>
#include <cstring>

namespace {

struct DtypeInfo {
  tfc_dtype_t dtype;
  size_t size;
  const char* name;
  const char* npyDescr;  // nullptr where .npy has no spelling
};

// Indexed by tfc_dtype_t.
constexpr DtypeInfo kDtypes[TFC_DTYPE_COUNT] = {
    {TFC_DTYPE_INVALID, 0, "INVALID", nullptr},
    {TFC_DTYPE_F32, 4, "F32", "<f4"},
    {TFC_DTYPE_F16, 2, "F16", "<f2"},
    {TFC_DTYPE_BF16, 2, "BF16", nullptr},
    {TFC_DTYPE_F64, 8, "F64", "<f8"},
    {TFC_DTYPE_I32, 4, "I32", "<i4"},
    {TFC_DTYPE_I64, 8, "I64", "<i8"},
    {TFC_DTYPE_U8, 1, "U8", "|u1"},
    {TFC_DTYPE_I8, 1, "I8", "|i1"},
    {TFC_DTYPE_U16, 2, "U16", "<u2"},
    {TFC_DTYPE_U32, 4, "U32", "<u4"},
    {TFC_DTYPE_BOOL, 1, "BOOL", "|b1"},
    {TFC_DTYPE_I16, 2, "I16", "<i2"},
    {TFC_DTYPE_U64, 8, "U64", "<u8"},
};

bool equals(const char* text, size_t length, const char* expected) {
  return std::strlen(expected) == length && std::memcmp(text, expected, length) == 0;
}

}  // namespace

extern "C" {

bool tfc_dtype_is_valid(tfc_dtype_t dtype) {
  return dtype > TFC_DTYPE_INVALID && static_cast<int>(dtype) < TFC_DTYPE_COUNT;
}

size_t tfc_dtype_size(tfc_dtype_t dtype) {
  return tfc_dtype_is_valid(dtype) ? kDtypes[dtype].size : 0;
}

const char* tfc_dtype_name(tfc_dtype_t dtype) {
  return tfc_dtype_is_valid(dtype) ? kDtypes[dtype].name : "INVALID";
}

bool tfc_dtype_from_name(const char* name, size_t length, tfc_dtype_t* out_dtype) {
  if (name == nullptr) return false;
  for (int i = 1; i < TFC_DTYPE_COUNT; ++i) {
    if (equals(name, length, kDtypes[i].name)) {
      *out_dtype = kDtypes[i].dtype;
      return true;
    }
  }
  return false;
}

const char* tfc_dtype_npy_descr(tfc_dtype_t dtype) {
  return tfc_dtype_is_valid(dtype) ? kDtypes[dtype].npyDescr : nullptr;
}

bool tfc_dtype_from_npy_descr(const char* descr, size_t length, tfc_dtype_t* out_dtype) {
  if (descr == nullptr) return false;
  for (int i = 1; i < TFC_DTYPE_COUNT; ++i) {
    if (kDtypes[i].npyDescr != nullptr && equals(descr, length, kDtypes[i].npyDescr)) {
      *out_dtype = kDtypes[i].dtype;
      return true;
    }
  }
  return false;
}


uint16_t tfc_f32_to_f16(float value) {
  uint32_t x = 0;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u | (absx > 0x7F800000u ? 0x200u : 0u));
  if (absx >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (absx < 0x38800000u) {  // below 2^-14: a subnormal half (or zero)
    float magnitude = 0.0f;
    std::memcpy(&magnitude, &absx, 4);
    auto units = static_cast<uint32_t>(std::nearbyint(magnitude * 16777216.0f));  // 2^24
    return static_cast<uint16_t>(sign | units);
  }
  uint32_t half = (((absx >> 23) - 112u) << 10) | ((absx & 0x7FFFFFu) >> 13);
  uint32_t rest = absx & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

uint16_t tfc_f32_to_bf16(float value) {
  uint32_t x = 0;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // extern "C"
