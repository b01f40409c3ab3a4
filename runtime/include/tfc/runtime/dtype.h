/* Element types of tensors, with their byte sizes and their names in the two file formats
 * the runtime reads and writes (safetensors and NumPy's .npy).
 *
 * Names:      F32  F16  BF16  F64  I32  I64  U8   I8   U16  U32  BOOL I16  U64
 * npy descr:  <f4  <f2  -     <f8  <i4  <i8  |u1  |i1  <u2  <u4  |b1  <i2  <u8
 *
 * BF16 has no .npy descr: NumPy has no bfloat16 type (ml_dtypes' extension type is
 * stored as an opaque void descr '<V2' that carries no meaning), so the .npy reader and
 * writer refuse it; keep bf16 tensors in safetensors, or convert them to f32.
 *
 * Multi-byte elements are little-endian in both formats. BOOL elements are single bytes;
 * readers do not normalize them, so treat any non-zero byte as true (read as uint8_t).
 *
 * Thread-safety: every function here is pure.
 */
#ifndef TFC_RUNTIME_DTYPE_H_
#define TFC_RUNTIME_DTYPE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The numeric values are part of the ABI: append, never renumber. */
typedef enum tfc_dtype_e {
  TFC_DTYPE_INVALID = 0,
  TFC_DTYPE_F32 = 1,
  TFC_DTYPE_F16 = 2,
  TFC_DTYPE_BF16 = 3,
  TFC_DTYPE_F64 = 4,
  TFC_DTYPE_I32 = 5,
  TFC_DTYPE_I64 = 6,
  TFC_DTYPE_U8 = 7,
  TFC_DTYPE_I8 = 8,
  TFC_DTYPE_U16 = 9,
  TFC_DTYPE_U32 = 10,
  TFC_DTYPE_BOOL = 11,
  TFC_DTYPE_I16 = 12,
  TFC_DTYPE_U64 = 13,
} tfc_dtype_t;

/* One past the largest valid tfc_dtype_t, for iterating over all of them. */
#define TFC_DTYPE_COUNT 14

/* Returns the size in bytes of one element of |dtype|; 0 for an invalid dtype. */
size_t tfc_dtype_size(tfc_dtype_t dtype);

/* Returns true if |dtype| is one of the valid values above (not TFC_DTYPE_INVALID). */
bool tfc_dtype_is_valid(tfc_dtype_t dtype);

/* Returns the safetensors name of |dtype| ("F32", "BF16", ...); "INVALID" otherwise. */
const char* tfc_dtype_name(tfc_dtype_t dtype);

/* Looks up a safetensors dtype name (exact, case-sensitive; |name| need not be
 * NUL-terminated). Returns false and leaves |*out_dtype| alone when unknown. */
bool tfc_dtype_from_name(const char* name, size_t length, tfc_dtype_t* out_dtype);

/* Returns the .npy descr of |dtype| ("<f4", "|u1", ...), or NULL for BF16 and invalid
 * dtypes, which .npy cannot represent. */
const char* tfc_dtype_npy_descr(tfc_dtype_t dtype);

/* Looks up a .npy descr. Only the little-endian (or byte-order-free '|') spellings above
 * are accepted. Returns false and leaves |*out_dtype| alone when unknown. */
bool tfc_dtype_from_npy_descr(const char* descr, size_t length, tfc_dtype_t* out_dtype);

/* Rounds |value| to the nearest IEEE binary16 / bfloat16 (ties to even; overflow to
 * infinity; NaN stays NaN), returning the bits. */
uint16_t tfc_f32_to_f16(float value);
uint16_t tfc_f32_to_bf16(float value);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* TFC_RUNTIME_DTYPE_H_ */
