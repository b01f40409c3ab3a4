// Internal: converting tensors between the floating-point dtypes of checkpoints (F32, BF16,
// F16), as tfc_params_load_pretrained does when a checkpoint's dtype differs from the
// artifact's. Widening (BF16 or F16 to F32) is exact, subnormals, infinities and NaNs
// included; narrowing rounds to nearest, ties to even, overflows to infinity and keeps NaN a
// NaN (quiet, with its sign). BF16 <-> F16 goes through F32, which holds both exactly, so it
// rounds once.
//
// The loops are branch-free over the elements (selects, no calls), so that the compiler
// vectorizes them: a 7B model is 14 GB of BF16 to widen at load time.
#ifndef TFC_RUNTIME_SRC_FLOAT_CONVERT_HPP_
#define TFC_RUNTIME_SRC_FLOAT_CONVERT_HPP_

#include <cstddef>

#include "tfc/runtime/dtype.h"

namespace tfc::internal {

// True if tensors of |from| can be converted to |to| by convertFloats: both are F32, BF16 or
// F16.
bool isConvertibleFloat(tfc_dtype_t from, tfc_dtype_t to);

// Converts |count| elements at |source| (dtype |from|, any alignment) to |to| at
// |destination| (any alignment; must not overlap the source). Returns false, writing
// nothing, when !isConvertibleFloat(from, to). Equal dtypes copy.
bool convertFloats(tfc_dtype_t from, const void* source, tfc_dtype_t to, void* destination,
                   size_t count);

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_FLOAT_CONVERT_HPP_
