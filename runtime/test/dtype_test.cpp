// Tests the dtype table: sizes and names in both file formats.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tfc/runtime/dtype.h"

namespace {

TEST(Dtype, Sizes) {
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_F32), 4u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_F16), 2u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_BF16), 2u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_F64), 8u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_I32), 4u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_I64), 8u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_U8), 1u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_I8), 1u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_U16), 2u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_U32), 4u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_BOOL), 1u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_I16), 2u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_U64), 8u);
  EXPECT_EQ(tfc_dtype_size(TFC_DTYPE_INVALID), 0u);
  EXPECT_EQ(tfc_dtype_size(static_cast<tfc_dtype_t>(TFC_DTYPE_COUNT)), 0u);
  EXPECT_EQ(tfc_dtype_size(static_cast<tfc_dtype_t>(-1)), 0u);
}

TEST(Dtype, SafetensorsNamesRoundTrip) {
  for (int i = 1; i < TFC_DTYPE_COUNT; ++i) {
    auto dtype = static_cast<tfc_dtype_t>(i);
    const char* name = tfc_dtype_name(dtype);
    tfc_dtype_t parsed = TFC_DTYPE_INVALID;
    ASSERT_TRUE(tfc_dtype_from_name(name, std::strlen(name), &parsed)) << name;
    EXPECT_EQ(parsed, dtype) << name;
  }
  EXPECT_STREQ(tfc_dtype_name(TFC_DTYPE_BF16), "BF16");
  EXPECT_STREQ(tfc_dtype_name(TFC_DTYPE_INVALID), "INVALID");
}

TEST(Dtype, UnknownNames) {
  tfc_dtype_t dtype = TFC_DTYPE_F32;
  EXPECT_FALSE(tfc_dtype_from_name("f32", 3, &dtype));        // case-sensitive
  EXPECT_FALSE(tfc_dtype_from_name("F8_E4M3", 7, &dtype));
  EXPECT_FALSE(tfc_dtype_from_name("INVALID", 7, &dtype));
  EXPECT_FALSE(tfc_dtype_from_name("", 0, &dtype));
  EXPECT_FALSE(tfc_dtype_from_name(nullptr, 0, &dtype));
  EXPECT_EQ(dtype, TFC_DTYPE_F32);  // untouched
  // Lengths are honoured: "F32" inside a longer buffer.
  EXPECT_TRUE(tfc_dtype_from_name("F32garbage", 3, &dtype));
  EXPECT_FALSE(tfc_dtype_from_name("F3", 2, &dtype));
}

TEST(Dtype, NpyDescrs) {
  const struct {
    tfc_dtype_t dtype;
    const char* descr;
  } kCases[] = {{TFC_DTYPE_F32, "<f4"}, {TFC_DTYPE_F16, "<f2"},  {TFC_DTYPE_F64, "<f8"},
                {TFC_DTYPE_I32, "<i4"}, {TFC_DTYPE_I64, "<i8"},  {TFC_DTYPE_U8, "|u1"},
                {TFC_DTYPE_I8, "|i1"},  {TFC_DTYPE_U16, "<u2"},  {TFC_DTYPE_U32, "<u4"},
                {TFC_DTYPE_BOOL, "|b1"}, {TFC_DTYPE_I16, "<i2"}, {TFC_DTYPE_U64, "<u8"}};
  for (const auto& c : kCases) {
    EXPECT_STREQ(tfc_dtype_npy_descr(c.dtype), c.descr);
    tfc_dtype_t parsed = TFC_DTYPE_INVALID;
    EXPECT_TRUE(tfc_dtype_from_npy_descr(c.descr, std::strlen(c.descr), &parsed)) << c.descr;
    EXPECT_EQ(parsed, c.dtype) << c.descr;
  }
  // NumPy has no bfloat16.
  EXPECT_EQ(tfc_dtype_npy_descr(TFC_DTYPE_BF16), nullptr);
  EXPECT_EQ(tfc_dtype_npy_descr(TFC_DTYPE_INVALID), nullptr);
  tfc_dtype_t dtype = TFC_DTYPE_INVALID;
  EXPECT_FALSE(tfc_dtype_from_npy_descr(">f4", 3, &dtype));  // big-endian
  EXPECT_FALSE(tfc_dtype_from_npy_descr("<c8", 3, &dtype));  // complex
  EXPECT_FALSE(tfc_dtype_from_npy_descr("<V2", 3, &dtype));  // ml_dtypes' bfloat16
  EXPECT_FALSE(tfc_dtype_from_npy_descr("<f4 ", 4, &dtype));
}

}  // namespace

// The artifact ABI spells dtypes as plain integers; they must stay equal to tfc_dtype_t.
#if __has_include("tfc/artifact_abi.h")
#include "tfc/artifact_abi.h"
static_assert(static_cast<int>(TFC_ABI_F32) == static_cast<int>(TFC_DTYPE_F32), "artifact ABI dtype F32 drifted");
static_assert(static_cast<int>(TFC_ABI_F16) == static_cast<int>(TFC_DTYPE_F16), "artifact ABI dtype F16 drifted");
static_assert(static_cast<int>(TFC_ABI_BF16) == static_cast<int>(TFC_DTYPE_BF16), "artifact ABI dtype BF16 drifted");
static_assert(static_cast<int>(TFC_ABI_I32) == static_cast<int>(TFC_DTYPE_I32), "artifact ABI dtype I32 drifted");
static_assert(static_cast<int>(TFC_ABI_I64) == static_cast<int>(TFC_DTYPE_I64), "artifact ABI dtype I64 drifted");
#endif
