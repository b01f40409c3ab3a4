// Internal: initializer specs of parameters and state ("zeros", "normal(0.0, 0.02)", ...)
// and the deterministic fills they stand for. The grammar is the one the compiler's
// verifier checks (dialects/tfc/TfcOps.cpp, verifyInitSpec).
#ifndef TFC_RUNTIME_SRC_INIT_HPP_
#define TFC_RUNTIME_SRC_INIT_HPP_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tfc/runtime/dtype.h"
#include "tfc/runtime/status.hpp"

namespace tfc::internal {

struct InitSpec {
  enum class Kind { kZeros, kOnes, kConstant, kNormal, kUniform, kOrthogonal };
  Kind kind = Kind::kZeros;
  double a = 0.0;  // constant: value; normal: mean; uniform: lo; orthogonal: gain
  double b = 0.0;  // normal: std; uniform: hi
};

// Parses |spec| for a tensor of |dtype| and |shape|. On failure returns INVALID_ARGUMENT
// with a message that starts with the problem (the caller prefixes the tensor's name).
StatusOr<InitSpec> parseInitSpec(std::string_view spec, tfc_dtype_t dtype,
                                 const std::vector<int64_t>& shape);

// SplitMix64: a 64-bit state, one addition and a mix per draw.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, 1) with 53 random bits.
  double nextDouble();
  // Standard normal by Box-Muller (both values of a pair are used).
  double nextNormal();

 private:
  uint64_t state_;
  bool haveSpare_ = false;
  double spare_ = 0.0;
};

// The stream seed of tensor |index| under user seed |seed|.
uint64_t initStreamSeed(uint64_t seed, uint64_t index);

// Fills |data| (dense, |dtype|, |shape|) from |spec| with a stream seeded by |streamSeed|.
// Float dtypes (F32, F16, BF16, F64) take every kind; integer dtypes zeros, ones and
// constant (rounded toward zero).
Status fillInit(const InitSpec& spec, tfc_dtype_t dtype, const std::vector<int64_t>& shape,
                uint64_t streamSeed, void* data);


float halfToFloat(uint16_t bits);
float bfloat16ToFloat(uint16_t bits);

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_INIT_HPP_
