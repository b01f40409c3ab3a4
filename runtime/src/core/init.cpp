#include "core/init.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "tfc/runtime/tensor.hpp"

namespace tfc::internal {

namespace {

constexpr const char* kGrammar =
    "zeros, ones, constant(v), normal(mean, std), uniform(lo, hi), orthogonal(gain)";

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool isFloatDtype(tfc_dtype_t dtype) {
  return dtype == TFC_DTYPE_F32 || dtype == TFC_DTYPE_F16 || dtype == TFC_DTYPE_BF16 ||
         dtype == TFC_DTYPE_F64;
}

bool isIntDtype(tfc_dtype_t dtype) { return dtype == TFC_DTYPE_I32 || dtype == TFC_DTYPE_I64; }

// Stores |value| as element |i| of |data|.
void store(tfc_dtype_t dtype, void* data, size_t i, double value) {
  switch (dtype) {
    case TFC_DTYPE_F32: static_cast<float*>(data)[i] = static_cast<float>(value); break;
    case TFC_DTYPE_F64: static_cast<double*>(data)[i] = value; break;
    case TFC_DTYPE_F16:
      static_cast<uint16_t*>(data)[i] = tfc_f32_to_f16(static_cast<float>(value));
      break;
    case TFC_DTYPE_BF16:
      static_cast<uint16_t*>(data)[i] = tfc_f32_to_bf16(static_cast<float>(value));
      break;
    case TFC_DTYPE_I32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(value); break;
    case TFC_DTYPE_I64: static_cast<int64_t*>(data)[i] = static_cast<int64_t>(value); break;
    default: break;
  }
}

}  // namespace

StatusOr<InitSpec> parseInitSpec(std::string_view spec, tfc_dtype_t dtype,
                                 const std::vector<int64_t>& shape) {
  std::string_view s = trim(spec);
  std::string quoted = "'" + std::string(spec) + "'";
  if (!isFloatDtype(dtype) && !isIntDtype(dtype)) {
    return Status::error(TFC_INVALID_ARGUMENT, "initializer %s: cannot initialize dtype %s",
                         quoted.c_str(), tfc_dtype_name(dtype));
  }
  InitSpec result;
  if (s == "zeros" || s == "ones") {
    result.kind = s == "zeros" ? InitSpec::Kind::kZeros : InitSpec::Kind::kOnes;
    return result;
  }
  size_t open = s.find('(');
  if (open == std::string_view::npos || s.empty() || s.back() != ')') {
    return Status::error(TFC_INVALID_ARGUMENT, "initializer %s is not one of %s",
                         quoted.c_str(), kGrammar);
  }
  std::string kind(trim(s.substr(0, open)));
  std::string_view argText = s.substr(open + 1, s.size() - open - 2);
  std::vector<double> values;
  for (;;) {
    size_t comma = argText.find(',');
    std::string arg(trim(argText.substr(0, comma)));
    char* end = nullptr;
    double value = arg.empty() ? 0.0 : std::strtod(arg.c_str(), &end);
    if (arg.empty() || end != arg.c_str() + arg.size()) {
      return Status::error(TFC_INVALID_ARGUMENT, "initializer %s: argument '%s' is not a number",
                           quoted.c_str(), arg.c_str());
    }
    if (!std::isfinite(value)) {
      return Status::error(TFC_INVALID_ARGUMENT, "initializer %s: argument '%s' is not finite",
                           quoted.c_str(), arg.c_str());
    }
    values.push_back(value);
    if (comma == std::string_view::npos) break;
    argText.remove_prefix(comma + 1);
  }
  size_t expected = 0;
  if (kind == "constant") {
    expected = 1;
    result.kind = InitSpec::Kind::kConstant;
  } else if (kind == "normal") {
    expected = 2;
    result.kind = InitSpec::Kind::kNormal;
  } else if (kind == "uniform") {
    expected = 2;
    result.kind = InitSpec::Kind::kUniform;
  } else if (kind == "orthogonal") {
    expected = 1;
    result.kind = InitSpec::Kind::kOrthogonal;
  } else {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "unknown initializer '%s' in %s (this runtime knows %s)", kind.c_str(),
                         quoted.c_str(), kGrammar);
  }
  if (values.size() != expected) {
    return Status::error(TFC_INVALID_ARGUMENT, "initializer '%s' takes %zu argument(s), got %zu",
                         kind.c_str(), expected, values.size());
  }
  result.a = values[0];
  if (expected == 2) result.b = values[1];
  if (result.kind == InitSpec::Kind::kNormal && result.b < 0) {
    return Status::error(TFC_INVALID_ARGUMENT, "normal initializer needs std >= 0, got %g",
                         result.b);
  }
  if (result.kind == InitSpec::Kind::kUniform && result.a > result.b) {
    return Status::error(TFC_INVALID_ARGUMENT, "uniform initializer needs lo <= hi, got (%g, %g)",
                         result.a, result.b);
  }
  if (result.kind == InitSpec::Kind::kOrthogonal && shape.size() < 2) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "orthogonal initializer needs a tensor of rank >= 2, got rank %zu",
                         shape.size());
  }
  bool random = result.kind == InitSpec::Kind::kNormal ||
                result.kind == InitSpec::Kind::kUniform ||
                result.kind == InitSpec::Kind::kOrthogonal;
  if (random && !isFloatDtype(dtype)) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "random initializer '%s' needs a float tensor, got %s", kind.c_str(),
                         tfc_dtype_name(dtype));
  }
  return result;
}

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double SplitMix64::nextDouble() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double SplitMix64::nextNormal() {
  if (haveSpare_) {
    haveSpare_ = false;
    return spare_;
  }
  double u1 = 1.0 - nextDouble();  // (0, 1]: log() stays finite
  double u2 = nextDouble();
  double radius = std::sqrt(-2.0 * std::log(u1));
  double angle = 2.0 * M_PI * u2;
  spare_ = radius * std::sin(angle);
  haveSpare_ = true;
  return radius * std::cos(angle);
}

uint64_t initStreamSeed(uint64_t seed, uint64_t index) {
  SplitMix64 outer(seed);
  uint64_t mixed = outer.next() ^ (index * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull);
  SplitMix64 inner(mixed);
  return inner.next();
}

Status fillInit(const InitSpec& spec, tfc_dtype_t dtype, const std::vector<int64_t>& shape,
                uint64_t streamSeed, void* data) {
  uint64_t bytes = 0;
  if (!computeByteSize(dtype, shape, &bytes)) {
    return Status(TFC_INVALID_ARGUMENT, "cannot initialize a tensor with this dtype and shape");
  }
  size_t count = bytes / tfc_dtype_size(dtype);
  SplitMix64 rng(streamSeed);
  switch (spec.kind) {
    case InitSpec::Kind::kZeros:
    case InitSpec::Kind::kOnes:
    case InitSpec::Kind::kConstant: {
      double value = spec.kind == InitSpec::Kind::kZeros  ? 0.0
                     : spec.kind == InitSpec::Kind::kOnes ? 1.0
                                                          : spec.a;
      if (value == 0.0) {
        std::memset(data, 0, bytes);
      } else {
        for (size_t i = 0; i < count; ++i) store(dtype, data, i, value);
      }
      return Status();
    }
    case InitSpec::Kind::kNormal:
      for (size_t i = 0; i < count; ++i) store(dtype, data, i, spec.a + spec.b * rng.nextNormal());
      return Status();
    case InitSpec::Kind::kUniform:
      for (size_t i = 0; i < count; ++i) {
        store(dtype, data, i, spec.a + (spec.b - spec.a) * rng.nextDouble());
      }
      return Status();
    case InitSpec::Kind::kOrthogonal: {
      // As torch.nn.init.orthogonal_: view the tensor as rows = shape[0] by cols = the rest;
      // the rows are orthonormal when rows <= cols, the columns otherwise.
      size_t rows = static_cast<size_t>(shape[0]);
      size_t cols = rows == 0 ? 0 : count / rows;
      if (count == 0) return Status();
      // A tall m x k matrix (m >= k) of normals, kept as k contiguous columns of length m.
      size_t m = std::max(rows, cols), k = std::min(rows, cols);
      std::unique_ptr<double[]> q(new (std::nothrow) double[m * k]);
      if (!q) return Status(TFC_OUT_OF_MEMORY, "out of memory for an orthogonal initializer");
      for (size_t i = 0; i < m; ++i) {
        for (size_t j = 0; j < k; ++j) q[j * m + i] = rng.nextNormal();
      }
      // Modified Gram-Schmidt, twice ("twice is enough") so that orthogonality holds to
      // rounding even for ill-conditioned draws. Diagonal of R stays positive, which is
      // the sign convention that makes Q Haar-distributed.
      for (size_t j = 0; j < k; ++j) {
        double* column = &q[j * m];
        for (int pass = 0; pass < 2; ++pass) {
          for (size_t p = 0; p < j; ++p) {
            const double* prior = &q[p * m];
            double dot = 0.0;
            for (size_t i = 0; i < m; ++i) dot += prior[i] * column[i];
            for (size_t i = 0; i < m; ++i) column[i] -= dot * prior[i];
          }
        }
        double norm = 0.0;
        for (size_t i = 0; i < m; ++i) norm += column[i] * column[i];
        norm = std::sqrt(norm);
        if (!(norm > 1e-300)) {
          return Status(TFC_INTERNAL, "orthogonal initializer drew a degenerate matrix");
        }
        for (size_t i = 0; i < m; ++i) column[i] /= norm;
      }
      for (size_t r = 0; r < rows; ++r) {
        for (size_t c = 0; c < cols; ++c) {
          // rows >= cols: W = Q (m = rows); rows < cols: W = Q^T (m = cols).
          double value = rows >= cols ? q[c * m + r] : q[r * m + c];
          store(dtype, data, r * cols + c, spec.a * value);
        }
      }
      return Status();
    }
  }
  return Status(TFC_INTERNAL, "unhandled initializer kind");
}


float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  float result = 0.0f;
  if (exponent == 0) {
    result = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    result = mantissa ? NAN : INFINITY;
  } else {
    result = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign ? -result : result;
}

float bfloat16ToFloat(uint16_t bits) {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  float result = 0.0f;
  std::memcpy(&result, &x, 4);
  return result;
}

}  // namespace tfc::internal
