// Internal: cuBLASLt, loaded at run time with dlopen, for the matrix products of CUDA artifacts.
//
// As with the CUDA driver (driver.hpp) and NCCL (nccl.hpp), the runtime has no link-time
// dependency on cuBLAS and builds without its headers: this header declares the few types,
// constants and functions it uses, with the values and signatures of cublasLt.h, cublas_api.h
// and library_types.h of CUDA 13 (stable since CUDA 11 for what is used here).
//
// Which library: the path in TFC_CUBLASLT_LIBRARY when it is set and not empty (tests point it
// at test/cuda_emulator's fake cuBLASLt), else libcublasLt.so.13, libcublasLt.so.12 or
// /usr/local/cuda/lib64/libcublasLt.so, the first that loads. Without one, products run on
// tfc's own kernels (the documented fallback, docs/runtime.md); TFC_CUDA_PRODUCTS=kernels
// asks for those even where cuBLASLt loads (to compare the two on one GPU).
//
// Thread-safety: loadCublasLt may be called from any thread; the CublasLt it returns is
// immutable and cuBLASLt's functions are thread-safe on distinct handles.
#ifndef TFC_RUNTIME_SRC_CUDA_CUBLASLT_HPP_
#define TFC_RUNTIME_SRC_CUDA_CUBLASLT_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "devices/cuda/driver.hpp"
#include "tfc/runtime/status.hpp"

namespace tfc::internal::cuda {

// ---- Types, as cublasLt.h declares them. ----
using cublasStatus_t = int;  // enums in cublas_api.h and library_types.h; int-sized
using cublasComputeType_t = int;
using cudaDataType_t = int;
using cublasLtMatmulDescAttributes_t = int;
using cublasLtMatrixLayoutAttribute_t = int;
using cublasLtMatmulPreferenceAttributes_t = int;
struct cublasLtContext;
using cublasLtHandle_t = cublasLtContext*;
// The opaque descriptors: cuBLASLt's users may allocate them themselves; tfc only holds
// pointers from the *Create functions.
struct cublasLtMatrixLayoutOpaque_t {
  uint64_t data[8];
};
struct cublasLtMatmulDescOpaque_t {
  uint64_t data[32];
};
struct cublasLtMatmulPreferenceOpaque_t {
  uint64_t data[8];
};
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque_t*;
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque_t*;
using cublasLtMatmulPreference_t = cublasLtMatmulPreferenceOpaque_t*;
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

// ---- Constants, copied from cublasLt.h, cublas_api.h and library_types.h. ----
constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
constexpr cublasStatus_t CUBLAS_STATUS_NOT_INITIALIZED = 1;
constexpr cublasStatus_t CUBLAS_STATUS_ALLOC_FAILED = 3;
constexpr cublasStatus_t CUBLAS_STATUS_INVALID_VALUE = 7;
constexpr cublasStatus_t CUBLAS_STATUS_EXECUTION_FAILED = 13;
constexpr cublasStatus_t CUBLAS_STATUS_INTERNAL_ERROR = 14;
constexpr cublasStatus_t CUBLAS_STATUS_NOT_SUPPORTED = 15;
constexpr int32_t CUBLAS_OP_N = 0;
constexpr int32_t CUBLAS_OP_T = 1;
constexpr cudaDataType_t CUDA_R_32F = 0;
constexpr cudaDataType_t CUDA_R_16F = 2;
constexpr cudaDataType_t CUDA_R_16BF = 14;
constexpr cublasComputeType_t CUBLAS_COMPUTE_32F = 68;
constexpr cublasComputeType_t CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
// cublasLtMatmulDescAttributes_t
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_TRANSA = 3;      // int32_t
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_TRANSB = 4;      // int32_t
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_EPILOGUE = 7;    // uint32_t
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8;  // void*
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26;  // int32_t
// cublasLtEpilogue_t
constexpr uint32_t CUBLASLT_EPILOGUE_DEFAULT = 1;
constexpr uint32_t CUBLASLT_EPILOGUE_BIAS = 4;
// cublasLtMatrixLayoutAttribute_t
constexpr cublasLtMatrixLayoutAttribute_t CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5;  // int32_t
constexpr cublasLtMatrixLayoutAttribute_t CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET =
    6;  // int64_t
// cublasLtMatmulPreferenceAttributes_t
constexpr cublasLtMatmulPreferenceAttributes_t CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES =
    1;  // uint64_t
constexpr cublasLtMatmulPreferenceAttributes_t CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES =
    5;  // uint32_t, and B, C, D after it
constexpr cublasLtMatmulPreferenceAttributes_t CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6;
constexpr cublasLtMatmulPreferenceAttributes_t CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7;
constexpr cublasLtMatmulPreferenceAttributes_t CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8;

// The cuBLASLt that tfc needs at least, in cublasLtGetVersion's encoding (major * 10000 +
// minor * 100 + patch): 11.0 brought the cublasComputeType_t values above.
constexpr size_t kMinCublasLtVersion = 110000;

// ---- Functions. ----
// Every cuBLASLt function the runtime uses: X(name, signature). The fake cuBLASLt of
// test/cuda_emulator checks its exports against this list at compile time.
#define TFC_CUBLASLT_FUNCTIONS(X)                                                               \
  X(cublasLtGetVersion, size_t())                                                               \
  X(cublasLtGetStatusString, const char*(cublasStatus_t status))                                \
  X(cublasLtCreate, cublasStatus_t(cublasLtHandle_t * handle))                                  \
  X(cublasLtDestroy, cublasStatus_t(cublasLtHandle_t handle))                                   \
  X(cublasLtMatmulDescCreate, cublasStatus_t(cublasLtMatmulDesc_t * desc,                       \
                                             cublasComputeType_t computeType,                   \
                                             cudaDataType_t scaleType))                         \
  X(cublasLtMatmulDescDestroy, cublasStatus_t(cublasLtMatmulDesc_t desc))                       \
  X(cublasLtMatmulDescSetAttribute,                                                             \
    cublasStatus_t(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,              \
                   const void* buf, size_t sizeInBytes))                                        \
  X(cublasLtMatrixLayoutCreate, cublasStatus_t(cublasLtMatrixLayout_t * layout,                 \
                                               cudaDataType_t type, uint64_t rows,              \
                                               uint64_t cols, int64_t ld))                      \
  X(cublasLtMatrixLayoutDestroy, cublasStatus_t(cublasLtMatrixLayout_t layout))                 \
  X(cublasLtMatrixLayoutSetAttribute,                                                           \
    cublasStatus_t(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,         \
                   const void* buf, size_t sizeInBytes))                                        \
  X(cublasLtMatmulPreferenceCreate, cublasStatus_t(cublasLtMatmulPreference_t * pref))          \
  X(cublasLtMatmulPreferenceDestroy, cublasStatus_t(cublasLtMatmulPreference_t pref))           \
  X(cublasLtMatmulPreferenceSetAttribute,                                                       \
    cublasStatus_t(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,  \
                   const void* buf, size_t sizeInBytes))                                        \
  X(cublasLtMatmulAlgoGetHeuristic,                                                             \
    cublasStatus_t(cublasLtHandle_t handle, cublasLtMatmulDesc_t operationDesc,                 \
                   cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,                  \
                   cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,                  \
                   cublasLtMatmulPreference_t preference, int requestedAlgoCount,               \
                   cublasLtMatmulHeuristicResult_t* heuristicResultsArray,                      \
                   int* returnAlgoCount))                                                       \
  X(cublasLtMatmul,                                                                             \
    cublasStatus_t(cublasLtHandle_t handle, cublasLtMatmulDesc_t computeDesc,                   \
                   const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,              \
                   const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,               \
                   const void* C, cublasLtMatrixLayout_t Cdesc, void* D,                        \
                   cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,              \
                   void* workspace, size_t workspaceSizeInBytes, CUstream stream))

// The loaded library: one pointer per function of TFC_CUBLASLT_FUNCTIONS, all non-null. Never
// unloaded (plans may outlive any one context).
struct CublasLt {
#define TFC_CUBLASLT_MEMBER_(name, signature) DriverFunction<signature> name = nullptr;
  TFC_CUBLASLT_FUNCTIONS(TFC_CUBLASLT_MEMBER_)
#undef TFC_CUBLASLT_MEMBER_

  std::string path;         // as passed to dlopen
  void* library = nullptr;  // from dlopen
  size_t version = 0;       // cublasLtGetVersion's, e.g. 130100
};

// The process's cuBLASLt: loaded and resolved on the first call, from $TFC_CUBLASLT_LIBRARY
// or else the first of the default names that loads; later calls return the same CublasLt
// or the same error. Fails with TFC_FAILED_PRECONDITION when no library can be loaded, one
// lacks a function, or is older than kMinCublasLtVersion; the message says which, names the
// library and TFC_CUBLASLT_LIBRARY.
StatusOr<const CublasLt*> loadCublasLt();

// The work of loadCublasLt, uncached: loads |path| (as given to dlopen) and checks it. Each
// successful call leaves the library loaded. |fromEnvironment| only words the errors.
StatusOr<std::unique_ptr<CublasLt>> loadCublasLtFrom(const std::string& path,
                                                     bool fromEnvironment = false);

// "13.1.0" for cublasLtGetVersion's 130100.
std::string cublasLtVersionText(size_t version);

// OK when |status| is CUBLAS_STATUS_SUCCESS, else TFC_INTERNAL "<what>: <cuBLASLt's text>".
Status checkCublasLt(const CublasLt& lt, cublasStatus_t status, const std::string& what);

}  // namespace tfc::internal::cuda

#endif  // TFC_RUNTIME_SRC_CUDA_CUBLASLT_HPP_
