// A fake libcublasLt.so.13 for the emulated CUDA driver (emulator.cpp), so that the cuBLASLt
// path of a CUDA artifact's matrix products (runtime/src/devices/cuda/cublaslt.hpp, products.cpp) runs
// on machines without a GPU. Test-only: point the runtime at it with
// TFC_CUBLASLT_LIBRARY=<build>/test/cuda_emulator/cublaslt/libcublasLt.so.13.
//
// What it does, and how:
//  - It keeps cuBLASLt's documented contract, so that a runtime which misuses it fails here
//    too: matrices are column-major (element (i, j) of batch b at ptr + b * stride + i +
//    j * ld, in elements), D (m x n) = alpha op(A) op(B) + beta C (+ bias[i] with the BIAS
//    epilogue), op(A) is m x k and op(B) k x n, every layout's batch count is D's, C's layout
//    is D's. A call that breaks the contract fails with CUBLAS_STATUS_INVALID_VALUE and says
//    why on stderr ("fake-cublaslt: ..."); a type combination or option that tfc has no use
//    for fails with CUBLAS_STATUS_NOT_SUPPORTED, as an unsupported one of cuBLASLt does.
//  - Only what cublaslt.hpp declares: compute types 32F and 32F_FAST_TF32 with f32 scales;
//    A and B of one type, f32 -> f32, bf16 -> bf16 or f32, f16 -> f16 or f32 (FAST_TF32 only
//    f32); the DEFAULT and BIAS epilogues, the bias of D's type; host alpha and beta.
//  - Arithmetic: products accumulate in f32 in the order of k with fmaf; bf16 and f16 are read
//    exactly; with FAST_TF32 every element of A and B is first rounded to TF32 as the tensor
//    cores' cvt.rna.tf32.f32 does; D is stored rounded to nearest even. With beta == 0, C is
//    not read (it may hold NaNs).
//  - cublasLtMatmulAlgoGetHeuristic returns one algorithm, needing no workspace, that is tied
//    to the problem's types, transposes and epilogue and to the preference's minimum
//    alignments (256 bytes unless set, as cuBLASLt assumes); cublasLtMatmul checks both
//    against its arguments, as a GPU kernel chosen for them would fault on others.
//  - Products are queued on the stream as host functions of the emulated driver
//    (cuLaunchHostFunc, found in the driver that TFC_CUDA_DRIVER names, else libcuda.so.1),
//    so that they run in stream order and are recorded by a stream capture and replayed by
//    every cuGraphLaunch, as cuBLASLt's kernels are. Their arguments are copied when queued
//    (alpha and beta too: their values at call time) and kept for the life of the process,
//    since a graph may replay them at any time.
//  - cublasLtDestroy prints "fake-cublaslt: N products" (the products queued on that handle)
//    to stderr, so that a test shows that products took this path and not tfc's kernels.
//  - TFC_FAKE_CUBLASLT_VERSION (a cublasLtGetVersion code) overrides the version, 130100.
// Thread-safe: one lock guards the handles and descriptors; it is never held while a
// product runs (the emulator runs those under its own lock).
#include <dlfcn.h>

#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>

#include "devices/cuda/cublaslt.hpp"

using namespace tfc::internal::cuda;  // NOLINT: cuBLASLt's types, as cublasLt.h's users see them

namespace tfc::internal::cuda {
struct cublasLtContext {
  long products = 0;  // queued on this handle
};
}  // namespace tfc::internal::cuda

#define TFC_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int32_t kUnset = -1;  // a bias type not set: D's
constexpr uint32_t kDefaultAlignment = 256;  // cuBLASLt's default minimum alignments
constexpr uint64_t kAlgoMagic = 0x7466632d63626c74ull;  // "tfc-cblt"

void complain(const char* format, ...) __attribute__((format(printf, 1, 2)));
void complain(const char* format, ...) {
  std::fputs("fake-cublaslt: ", stderr);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
}

struct Desc {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int32_t biasType = kUnset;
};

struct Layout {
  cudaDataType_t type = CUDA_R_32F;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;  // in elements

  bool operator==(const Layout& o) const {
    return type == o.type && rows == o.rows && cols == o.cols && ld == o.ld &&
           batch == o.batch && stride == o.stride;
  }
};

struct Preference {
  uint64_t maxWorkspace = 0;
  uint32_t alignment[4] = {kDefaultAlignment, kDefaultAlignment, kDefaultAlignment,
                           kDefaultAlignment};  // A, B, C, D
};

// The handles and descriptors handed out, by address (the opaque structs are only storage).
struct State {
  std::mutex mutex;
  std::set<const void*> handles;
  std::map<const void*, Desc> descs;
  std::map<const void*, Layout> layouts;
  std::map<const void*, Preference> preferences;
};

// Never destroyed: a process may destroy its handles from its static destructors.
State& state() {
  static State* instance = new State;
  return *instance;
}

// One queued product: everything it reads, copied when it was queued.
struct Product {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  bool transa = false, transb = false;
  uint64_t m = 0, n = 0, k = 0;
  int32_t batch = 1;
  float alpha = 1, beta = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;
  const void* bias = nullptr;  // null without the BIAS epilogue
  Layout la, lb, lc, ld;
  cudaDataType_t biasType = CUDA_R_32F;
};

// Kept for ever: a captured graph replays its products until the process ends.
std::mutex productsMutex;
std::deque<Product>& products() {
  static auto* instance = new std::deque<Product>;
  return *instance;
}

const char* typeName(cudaDataType_t type) {
  switch (type) {
    case CUDA_R_32F: return "f32";
    case CUDA_R_16F: return "f16";
    case CUDA_R_16BF: return "bf16";
    default: return "an unknown type";
  }
}

bool knownType(cudaDataType_t type) {
  return type == CUDA_R_32F || type == CUDA_R_16F || type == CUDA_R_16BF;
}

// ---- Number formats. ----

uint32_t bitsOf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

float floatOf(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in f32
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return floatOf(sign | 0x7F800000u | (mantissa << 13));  // inf, NaN
  return floatOf(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t floatToHalf(float x) {
  const uint32_t bits = bitsOf(x);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) {  // inf stays inf; NaN stays a (quiet) NaN
    return static_cast<uint16_t>(sign | (magnitude > 0x7F800000u ? 0x7E00u : 0x7C00u));
  }
  // 65520 (halfway from 65504, the largest half, to 65536) and above round to inf.
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a subnormal half, in units of 2^-24. The scaling is exact and nearbyint
    // rounds to nearest even (the default mode); 1024 units carry into the smallest normal.
    const float units = std::nearbyint(std::fabs(x) * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(units));
  }
  uint32_t half = ((((magnitude >> 23) - 127 + 15) << 10) | ((magnitude >> 13) & 0x3FFu));
  const uint32_t dropped = magnitude & 0x1FFFu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u) != 0)) ++half;  // may carry
  return static_cast<uint16_t>(sign | half);
}

float bf16ToFloat(uint16_t h) { return floatOf(static_cast<uint32_t>(h) << 16); }

uint16_t floatToBf16(float x) {
  const uint32_t bits = bitsOf(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x40u);  // a quiet NaN
  }
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// cvt.rna.tf32.f32: 10 mantissa bits kept, to nearest with ties away from zero (adding half
// of the last kept bit to the magnitude); inf and NaN kept.
float roundToTf32(float x) {
  const uint32_t bits = bitsOf(x);
  if ((bits & 0x7F800000u) == 0x7F800000u) return x;
  return floatOf((bits + 0x1000u) & ~0x1FFFu);
}

float load(const void* base, cudaDataType_t type, size_t index) {
  switch (type) {
    case CUDA_R_32F: return static_cast<const float*>(base)[index];
    case CUDA_R_16F: return halfToFloat(static_cast<const uint16_t*>(base)[index]);
    default: return bf16ToFloat(static_cast<const uint16_t*>(base)[index]);
  }
}

void store(void* base, cudaDataType_t type, size_t index, float value) {
  switch (type) {
    case CUDA_R_32F: static_cast<float*>(base)[index] = value; break;
    case CUDA_R_16F: static_cast<uint16_t*>(base)[index] = floatToHalf(value); break;
    default: static_cast<uint16_t*>(base)[index] = floatToBf16(value); break;
  }
}

// The index of element (i, j) of batch |b| of a column-major matrix.
size_t at(const Layout& layout, int32_t b, uint64_t i, uint64_t j) {
  return static_cast<size_t>(b) * static_cast<size_t>(layout.stride) + i +
         j * static_cast<size_t>(layout.ld);
}

std::atomic<long> productsRun{0};

// The host function of a queued product; runs under the emulator's lock, so it takes no lock
// of its own (cublasLtMatmul holds the fake's lock while it queues).
void runProduct(void* record) {
  const Product& p = *static_cast<const Product*>(record);
  const bool tf32 = p.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  for (int32_t b = 0; b < p.batch; ++b) {
    for (uint64_t j = 0; j < p.n; ++j) {
      for (uint64_t i = 0; i < p.m; ++i) {
        float acc = 0.0f;
        for (uint64_t l = 0; l < p.k; ++l) {
          float x = load(p.a, p.la.type, p.transa ? at(p.la, b, l, i) : at(p.la, b, i, l));
          float y = load(p.b, p.lb.type, p.transb ? at(p.lb, b, j, l) : at(p.lb, b, l, j));
          if (tf32) {
            x = roundToTf32(x);
            y = roundToTf32(y);
          }
          acc = std::fmaf(x, y, acc);
        }
        float value = p.alpha * acc;
        if (p.beta != 0.0f) value += p.beta * load(p.c, p.lc.type, at(p.lc, b, i, j));
        if (p.bias != nullptr) value += load(p.bias, p.biasType, static_cast<size_t>(i));
        store(p.d, p.ld.type, at(p.ld, b, i, j), value);
      }
    }
  }
  productsRun.fetch_add(1, std::memory_order_relaxed);
}

// ---- Checks shared by the heuristic and the product. ----

// Everything a product is made of, looked up under the lock.
struct Problem {
  Desc desc;
  Layout a, b, c, d;
  uint64_t m = 0, n = 0, k = 0;
  cudaDataType_t biasType = CUDA_R_32F;
};

template <typename Map>
const typename Map::mapped_type* find(const Map& map, const void* key) {
  auto found = map.find(key);
  return found != map.end() ? &found->second : nullptr;
}

// Looks up the handle and descriptors and checks that they make a valid product (dims, batch
// counts, C's layout); the caller holds the lock. |what| names the call in messages.
cublasStatus_t makeProblem(cublasLtHandle_t handle, cublasLtMatmulDesc_t descHandle,
                           cublasLtMatrixLayout_t aHandle, cublasLtMatrixLayout_t bHandle,
                           cublasLtMatrixLayout_t cHandle, cublasLtMatrixLayout_t dHandle,
                           const char* what, Problem* problem) {
  State& s = state();
  if (handle == nullptr || s.handles.count(handle) == 0) {
    complain("%s: not a handle of cublasLtCreate", what);
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  const Desc* desc = find(s.descs, descHandle);
  const Layout* a = find(s.layouts, aHandle);
  const Layout* b = find(s.layouts, bHandle);
  const Layout* c = find(s.layouts, cHandle);
  const Layout* d = find(s.layouts, dHandle);
  if (desc == nullptr || a == nullptr || b == nullptr || c == nullptr || d == nullptr) {
    complain("%s: a descriptor or layout that was not created (or was destroyed)", what);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  Problem& p = *problem;
  p.desc = *desc;
  p.a = *a;
  p.b = *b;
  p.c = *c;
  p.d = *d;
  p.m = d->rows;
  p.n = d->cols;
  const bool ta = desc->transa == CUBLAS_OP_T, tb = desc->transb == CUBLAS_OP_T;
  // op(A) is m x k: A is m x k, or k x m transposed.
  const uint64_t aRows = ta ? a->cols : a->rows;
  p.k = ta ? a->rows : a->cols;
  // op(B) is k x n: B is k x n, or n x k transposed.
  const uint64_t bRows = tb ? b->cols : b->rows, bCols = tb ? b->rows : b->cols;
  if (aRows != p.m || bRows != p.k || bCols != p.n) {
    complain("%s: op(A) is %llux%llu (A %llux%llu%s), op(B) %llux%llu (B %llux%llu%s), but D "
             "is %llux%llu: op(A) must be m x k and op(B) k x n for D m x n (column-major)",
             what, static_cast<unsigned long long>(aRows), static_cast<unsigned long long>(p.k),
             static_cast<unsigned long long>(a->rows), static_cast<unsigned long long>(a->cols),
             ta ? ", transposed" : "", static_cast<unsigned long long>(bRows),
             static_cast<unsigned long long>(bCols), static_cast<unsigned long long>(b->rows),
             static_cast<unsigned long long>(b->cols), tb ? ", transposed" : "",
             static_cast<unsigned long long>(p.m), static_cast<unsigned long long>(p.n));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (a->batch != d->batch || b->batch != d->batch || c->batch != d->batch) {
    complain("%s: batch counts A %d, B %d, C %d differ from D's %d", what, a->batch, b->batch,
             c->batch, d->batch);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (!(*c == *d)) {
    complain("%s: C's layout (%s %llux%llu, ld %lld, stride %lld) is not D's (%s %llux%llu, "
             "ld %lld, stride %lld)",
             what, typeName(c->type), static_cast<unsigned long long>(c->rows),
             static_cast<unsigned long long>(c->cols), static_cast<long long>(c->ld),
             static_cast<long long>(c->stride), typeName(d->type),
             static_cast<unsigned long long>(d->rows), static_cast<unsigned long long>(d->cols),
             static_cast<long long>(d->ld), static_cast<long long>(d->stride));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  // Batches of D that overlap would be written by concurrent blocks on a GPU: a race.
  if (d->batch > 1 && static_cast<uint64_t>(d->stride) < static_cast<uint64_t>(d->ld) * d->cols) {
    complain("%s: D's batches overlap: stride %lld < ld %lld x %llu columns", what,
             static_cast<long long>(d->stride), static_cast<long long>(d->ld),
             static_cast<unsigned long long>(d->cols));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  p.biasType = desc->biasType == kUnset ? d->type : desc->biasType;
  return CUBLAS_STATUS_SUCCESS;
}

// Whether cuBLASLt (as faked) has an algorithm for the problem's types; says why not.
cublasStatus_t checkSupported(const Problem& p, const char* what) {
  const cudaDataType_t in = p.a.type, out = p.d.type;
  const bool types = p.b.type == in && (out == in || out == CUDA_R_32F) &&
                     (p.desc.compute != CUBLAS_COMPUTE_32F_FAST_TF32 || in == CUDA_R_32F);
  if (!types) {
    complain("%s: no algorithm for A %s, B %s, C/D %s with compute type %d", what,
             typeName(in), typeName(p.b.type), typeName(out), p.desc.compute);
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (p.desc.epilogue == CUBLASLT_EPILOGUE_BIAS && p.biasType != out) {
    complain("%s: a %s bias for a %s D is not supported", what, typeName(p.biasType),
             typeName(out));
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

// What an algorithm is tied to: the types, transposes and epilogue.
uint64_t signature(const Problem& p) {
  return static_cast<uint64_t>(p.desc.compute & 0xFF) |
         static_cast<uint64_t>(p.a.type & 0xFF) << 8 |
         static_cast<uint64_t>(p.b.type & 0xFF) << 16 |
         static_cast<uint64_t>(p.d.type & 0xFF) << 24 |
         static_cast<uint64_t>(p.desc.transa & 1) << 32 |
         static_cast<uint64_t>(p.desc.transb & 1) << 33 |
         static_cast<uint64_t>(p.desc.epilogue & 0xFF) << 40 |
         static_cast<uint64_t>(p.biasType & 0xFF) << 48;
}

// |size| must be sizeof(T); copies the attribute's value.
template <typename T>
bool readAttribute(const void* buf, size_t size, T* value) {
  if (buf == nullptr || size != sizeof(T)) return false;
  std::memcpy(value, buf, sizeof(T));
  return true;
}

}  // namespace

// ---- Version, status, handles. ----

TFC_FAKE_EXPORT size_t cublasLtGetVersion() {
  const char* forced = std::getenv("TFC_FAKE_CUBLASLT_VERSION");
  return forced != nullptr && *forced != '\0'
             ? static_cast<size_t>(std::strtoull(forced, nullptr, 10))
             : size_t{130100};
}

TFC_FAKE_EXPORT const char* cublasLtGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "<unknown>";
  }
}

TFC_FAKE_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state().mutex);
  *handle = new cublasLtContext;
  state().handles.insert(*handle);
  return CUBLAS_STATUS_SUCCESS;
}

TFC_FAKE_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (handle == nullptr || state().handles.erase(handle) == 0) {
    complain("cublasLtDestroy: not a live handle of cublasLtCreate");
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  std::fprintf(stderr, "fake-cublaslt: %ld products\n", handle->products);
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

namespace {

// The Create and Destroy of a descriptor kind: |map| holds the live ones by address.
template <typename Opaque, typename Map>
cublasStatus_t createDescriptor(Map& map, Opaque** out, typename Map::mapped_type value) {
  auto* opaque = new Opaque{};
  map.emplace(opaque, value);
  *out = opaque;
  return CUBLAS_STATUS_SUCCESS;
}

template <typename Opaque, typename Map>
cublasStatus_t destroyDescriptor(Map& map, Opaque* opaque, const char* what) {
  if (opaque == nullptr) return CUBLAS_STATUS_SUCCESS;  // as free(NULL)
  if (map.erase(opaque) == 0) {
    complain("%s: not a live descriptor (destroyed twice?)", what);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  delete opaque;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

// ---- Matmul descriptors. ----

TFC_FAKE_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc,
                                                        cublasComputeType_t computeType,
                                                        cudaDataType_t scaleType) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (computeType != CUBLAS_COMPUTE_32F && computeType != CUBLAS_COMPUTE_32F_FAST_TF32) {
    complain("cublasLtMatmulDescCreate: compute type %d is not faked", computeType);
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (scaleType != CUDA_R_32F) {
    complain("cublasLtMatmulDescCreate: scale type %d with an f32 compute type", scaleType);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  Desc value;
  value.compute = computeType;
  return createDescriptor(state().descs, desc, value);
}

TFC_FAKE_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return destroyDescriptor(state().descs, desc, "cublasLtMatmulDescDestroy");
}

TFC_FAKE_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                              cublasLtMatmulDescAttributes_t attr,
                                                              const void* buf,
                                                              size_t sizeInBytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto found = state().descs.find(desc);
  if (found == state().descs.end()) return CUBLAS_STATUS_INVALID_VALUE;
  Desc& d = found->second;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
      int32_t op = 0;
      if (!readAttribute(buf, sizeInBytes, &op) || (op != CUBLAS_OP_N && op != CUBLAS_OP_T)) {
        complain("cublasLtMatmulDescSetAttribute: TRANSA/TRANSB takes an int32_t N or T");
        return CUBLAS_STATUS_INVALID_VALUE;
      }
      (attr == CUBLASLT_MATMUL_DESC_TRANSA ? d.transa : d.transb) = op;
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE: {
      uint32_t epilogue = 0;
      if (!readAttribute(buf, sizeInBytes, &epilogue)) {
        complain("cublasLtMatmulDescSetAttribute: EPILOGUE takes a uint32_t");
        return CUBLAS_STATUS_INVALID_VALUE;
      }
      if (epilogue != CUBLASLT_EPILOGUE_DEFAULT && epilogue != CUBLASLT_EPILOGUE_BIAS) {
        complain("cublasLtMatmulDescSetAttribute: epilogue %u is not faked", epilogue);
        return CUBLAS_STATUS_NOT_SUPPORTED;
      }
      d.epilogue = epilogue;
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      if (!readAttribute(buf, sizeInBytes, &d.bias)) {
        complain("cublasLtMatmulDescSetAttribute: BIAS_POINTER takes a pointer");
        return CUBLAS_STATUS_INVALID_VALUE;
      }
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: {
      int32_t type = 0;
      if (!readAttribute(buf, sizeInBytes, &type) || !knownType(type)) {
        complain("cublasLtMatmulDescSetAttribute: BIAS_DATA_TYPE takes an int32_t f32, f16 "
                 "or bf16");
        return CUBLAS_STATUS_INVALID_VALUE;
      }
      d.biasType = type;
      return CUBLAS_STATUS_SUCCESS;
    }
    default:
      complain("cublasLtMatmulDescSetAttribute: attribute %d is not faked", attr);
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

// ---- Matrix layouts. ----

TFC_FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout,
                                                          cudaDataType_t type, uint64_t rows,
                                                          uint64_t cols, int64_t ld) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (!knownType(type)) {
    complain("cublasLtMatrixLayoutCreate: type %d is not faked", type);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  // Column-major: a column of |rows| elements fits in the leading dimension.
  if (ld < 1 || static_cast<uint64_t>(ld) < rows) {
    complain("cublasLtMatrixLayoutCreate: ld %lld < %llu rows (layouts are column-major)",
             static_cast<long long>(ld), static_cast<unsigned long long>(rows));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  Layout value;
  value.type = type;
  value.rows = rows;
  value.cols = cols;
  value.ld = ld;
  return createDescriptor(state().layouts, layout, value);
}

TFC_FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return destroyDescriptor(state().layouts, layout, "cublasLtMatrixLayoutDestroy");
}

TFC_FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(
    cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void* buf,
    size_t sizeInBytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto found = state().layouts.find(layout);
  if (found == state().layouts.end()) return CUBLAS_STATUS_INVALID_VALUE;
  Layout& l = found->second;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: {
      int32_t count = 0;
      if (!readAttribute(buf, sizeInBytes, &count) || count < 1) {
        complain("cublasLtMatrixLayoutSetAttribute: BATCH_COUNT takes an int32_t >= 1");
        return CUBLAS_STATUS_INVALID_VALUE;
      }
      l.batch = count;
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: {
      int64_t stride = 0;
      if (!readAttribute(buf, sizeInBytes, &stride) || stride < 0) {
        complain("cublasLtMatrixLayoutSetAttribute: STRIDED_BATCH_OFFSET takes an int64_t "
                 ">= 0");
        return CUBLAS_STATUS_INVALID_VALUE;
      }
      l.stride = stride;
      return CUBLAS_STATUS_SUCCESS;
    }
    default:
      complain("cublasLtMatrixLayoutSetAttribute: attribute %d is not faked", attr);
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

// ---- Preferences. ----

TFC_FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state().mutex);
  return createDescriptor(state().preferences, pref, Preference{});
}

TFC_FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return destroyDescriptor(state().preferences, pref, "cublasLtMatmulPreferenceDestroy");
}

TFC_FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
    size_t sizeInBytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto found = state().preferences.find(pref);
  if (found == state().preferences.end()) return CUBLAS_STATUS_INVALID_VALUE;
  Preference& p = found->second;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      if (!readAttribute(buf, sizeInBytes, &p.maxWorkspace)) {
        complain("cublasLtMatmulPreferenceSetAttribute: MAX_WORKSPACE_BYTES takes a uint64_t");
        return CUBLAS_STATUS_INVALID_VALUE;
      }
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      if (!readAttribute(buf, sizeInBytes,
                         &p.alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES])) {
        complain("cublasLtMatmulPreferenceSetAttribute: MIN_ALIGNMENT_*_BYTES takes a "
                 "uint32_t");
        return CUBLAS_STATUS_INVALID_VALUE;
      }
      return CUBLAS_STATUS_SUCCESS;
    default:
      complain("cublasLtMatmulPreferenceSetAttribute: attribute %d is not faked", attr);
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

// ---- Heuristic and product. ----

TFC_FAKE_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t* heuristicResultsArray, int* returnAlgoCount) {
  const char* what = "cublasLtMatmulAlgoGetHeuristic";
  if (returnAlgoCount == nullptr || heuristicResultsArray == nullptr || requestedAlgoCount < 1) {
    complain("%s: no room for a result", what);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  *returnAlgoCount = 0;
  std::lock_guard<std::mutex> lock(state().mutex);
  Problem problem;
  if (cublasStatus_t bad =
          makeProblem(handle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, what, &problem)) {
    return bad;
  }
  const Preference* pref = find(state().preferences, preference);
  if (pref == nullptr) {
    complain("%s: a preference that was not created (or was destroyed)", what);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (cublasStatus_t bad = checkSupported(problem, what)) return bad;
  cublasLtMatmulHeuristicResult_t& result = heuristicResultsArray[0];
  result = cublasLtMatmulHeuristicResult_t{};
  result.algo.data[0] = kAlgoMagic;
  result.algo.data[1] = signature(problem);
  for (int i = 0; i < 4; ++i) result.algo.data[2 + i] = pref->alignment[i];
  result.algo.data[6] = 0;  // the workspace it needs: none, within any MAX_WORKSPACE_BYTES
  result.workspaceSize = result.algo.data[6];
  result.state = CUBLAS_STATUS_SUCCESS;
  result.wavesCount = 1.0f;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

namespace {

// The emulated driver's cuLaunchHostFunc, from the driver the runtime loaded (the one that
// TFC_CUDA_DRIVER names, else libcuda.so.1); null while none is loaded or it is not the
// emulator. Only a success is kept, so a driver loaded later is still found.
using LaunchHostFunc = CUresult (*)(CUstream, CUhostFn, void*);
LaunchHostFunc launchHostFunc() {
  static std::atomic<LaunchHostFunc> found{nullptr};
  if (LaunchHostFunc known = found.load()) return known;
  const char* driver = std::getenv("TFC_CUDA_DRIVER");
  void* library = dlopen(driver != nullptr && *driver != '\0' ? driver : "libcuda.so.1",
                         RTLD_NOW | RTLD_NOLOAD);
  auto symbol = library != nullptr
                    ? reinterpret_cast<LaunchHostFunc>(dlsym(library, "cuLaunchHostFunc"))
                    : nullptr;
  if (library != nullptr) dlclose(library);  // NOLOAD took a reference; the runtime holds one
  found.store(symbol);
  return symbol;
}

}  // namespace

TFC_FAKE_EXPORT cublasStatus_t cublasLtMatmul(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t computeDesc, const void* alpha, const void* A,
    cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
    const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
    const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes,
    CUstream stream) {
  const char* what = "cublasLtMatmul";
  (void)workspace;  // no algorithm needs one
  Product product;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    Problem p;
    if (cublasStatus_t bad = makeProblem(handle, computeDesc, Adesc, Bdesc, Cdesc, Ddesc, what,
                                         &p)) {
      return bad;
    }
    if (cublasStatus_t bad = checkSupported(p, what)) return bad;
    if (algo == nullptr || algo->data[0] != kAlgoMagic) {
      complain("%s: not an algorithm of cublasLtMatmulAlgoGetHeuristic", what);
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (algo->data[1] != signature(p)) {
      complain("%s: the algorithm was chosen for other types, transposes or epilogue", what);
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (alpha == nullptr || beta == nullptr || A == nullptr || B == nullptr || C == nullptr ||
        D == nullptr) {
      complain("%s: a null alpha, beta, A, B, C or D", what);
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (p.desc.epilogue == CUBLASLT_EPILOGUE_BIAS && p.desc.bias == nullptr) {
      complain("%s: the BIAS epilogue without a BIAS_POINTER", what);
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    // The algorithm's kernel assumes the alignments the preference promised.
    const void* pointers[4] = {A, B, C, D};
    const char* names[4] = {"A", "B", "C", "D"};
    for (int i = 0; i < 4; ++i) {
      const uint64_t alignment = algo->data[2 + i];
      if (alignment != 0 && reinterpret_cast<uintptr_t>(pointers[i]) % alignment != 0) {
        complain("%s: %s at %p is not aligned to the %llu bytes that the preference promised",
                 what, names[i], pointers[i], static_cast<unsigned long long>(alignment));
        return CUBLAS_STATUS_INVALID_VALUE;
      }
    }
    if (workspaceSizeInBytes < algo->data[6]) {
      complain("%s: a workspace of %zu bytes, the algorithm needs %llu", what,
               workspaceSizeInBytes, static_cast<unsigned long long>(algo->data[6]));
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    product.compute = p.desc.compute;
    product.transa = p.desc.transa == CUBLAS_OP_T;
    product.transb = p.desc.transb == CUBLAS_OP_T;
    product.m = p.m;
    product.n = p.n;
    product.k = p.k;
    product.batch = p.d.batch;
    std::memcpy(&product.alpha, alpha, sizeof(float));  // host scalars: their values now
    std::memcpy(&product.beta, beta, sizeof(float));
    product.a = A;
    product.b = B;
    product.c = C;
    product.d = D;
    product.bias = p.desc.epilogue == CUBLASLT_EPILOGUE_BIAS ? p.desc.bias : nullptr;
    product.la = p.a;
    product.lb = p.b;
    product.lc = p.c;
    product.ld = p.d;
    product.biasType = p.biasType;
  }
  LaunchHostFunc launch = launchHostFunc();
  if (launch == nullptr) {
    complain("%s: the loaded CUDA driver has no cuLaunchHostFunc (TFC_CUDA_DRIVER must name "
             "the emulated driver, test/cuda_emulator's libcuda.so.1)", what);
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  Product* record = nullptr;
  {
    std::lock_guard<std::mutex> lock(productsMutex);
    products().push_back(product);
    record = &products().back();  // a deque keeps its elements in place as it grows
  }
  // Without the fake's lock: the emulator runs the product now, under its own lock.
  if (CUresult result = launch(stream, runProduct, record)) {
    complain("%s: cuLaunchHostFunc failed with CUDA error %d", what, result);
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  // The handle may have been destroyed meanwhile by another thread (a misuse): not counted.
  if (state().handles.count(handle) != 0) ++handle->products;
  return CUBLAS_STATUS_SUCCESS;
}

// Every function of the runtime's list is exported here, with its signature.
#define TFC_FAKE_CHECK_EXPORT_(name, signature)                                 \
  static_assert(std::is_same_v<decltype(&::name), DriverFunction<signature>>, \
                "the fake " #name " differs from runtime/src/devices/cuda/cublaslt.hpp's");
TFC_CUBLASLT_FUNCTIONS(TFC_FAKE_CHECK_EXPORT_)
#undef TFC_FAKE_CHECK_EXPORT_
