// Matrix products on cuBLASLt: see products.hpp.
#include "devices/cuda/products.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace tfc::internal::cuda {
namespace {

constexpr const char* kChoiceVariable = "TFC_CUDA_PRODUCTS";

// cuBLASLt's type of a TFC_ABI_* element type, or -1 where it has none that tfc uses.
cudaDataType_t libraryType(int32_t type) {
  switch (type) {
    case TFC_ABI_F32: return CUDA_R_32F;
    case TFC_ABI_F16: return CUDA_R_16F;
    case TFC_ABI_BF16: return CUDA_R_16BF;
    default: return -1;
  }
}

// Whether cuBLASLt runs these types with f32 sums (its documented combinations).
bool supportedTypes(const tfc_device_matmul_t& p) {
  if (p.a_type != p.b_type || libraryType(p.a_type) < 0) return false;
  if (p.bias_type != 0 && p.bias_type != p.c_type) return false;
  if (p.a_type == TFC_ABI_F32) return p.c_type == TFC_ABI_F32;
  return p.c_type == p.a_type || p.c_type == TFC_ABI_F32;
}

// The largest power of two, up to 256, that divides |address| (cuBLASLt's alignment terms).
uint32_t alignmentOf(const void* address) {
  auto value = reinterpret_cast<uintptr_t>(address);
  uint32_t alignment = 256;
  while (alignment > 1 && value % alignment != 0) alignment /= 2;
  return alignment;
}

}  // namespace

struct LibraryProducts::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A, B and C/D
  cublasLtMatmulAlgo_t algo{};
  bool refused = false;  // no algorithm: the artifact's kernel runs it
};

void LibraryProducts::PlanDeleter::operator()(Plan* plan) const {
  if (plan->desc != nullptr) lt->cublasLtMatmulDescDestroy(plan->desc);
  for (cublasLtMatrixLayout_t layout : {plan->a, plan->b, plan->c}) {
    if (layout != nullptr) lt->cublasLtMatrixLayoutDestroy(layout);
  }
  delete plan;
}

bool LibraryProducts::Key::operator<(const Key& other) const {
  return std::memcmp(this, &other, sizeof(Key)) < 0;
}

LibraryProducts::LibraryProducts(std::string path) : path_(std::move(path)) {
  const char* choice = std::getenv(kChoiceVariable);
  std::string wanted = choice != nullptr ? choice : "";
  if (wanted == "kernels") {
    summary_ = "tfc's kernels (TFC_CUDA_PRODUCTS=kernels)";
    return;
  }
  auto lt = loadCublasLt();
  if (!lt.ok()) {
    // The documented fallback: tfc's own tensor-core kernels run every product.
    summary_ = fmt::format("tfc's kernels ({})", lt.status().message());
    return;
  }
  lt_ = *lt;
  summary_ = "cuBLASLt " + cublasLtVersionText(lt_->version);
}

LibraryProducts::~LibraryProducts() {
  if (lt_ == nullptr) return;
  for (auto& [key, plan] : plans_) PlanDeleter{lt_}(plan);
  if (handle_ != nullptr) lt_->cublasLtDestroy(handle_);
}

StatusOr<LibraryProducts::Plan*> LibraryProducts::plan(const Key& key, const void* bias) {
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second;
  const CublasLt& lt = *lt_;
  auto check = [&](cublasStatus_t status, const std::string& what) {
    return checkCublasLt(lt, status, fmt::format("{}: cuBLASLt {}", path_, what));
  };
  // Destroyed again unless complete: a failed plan is made anew at the next call.
  auto plan = std::unique_ptr<Plan, PlanDeleter>(new Plan, PlanDeleter{lt_});
  const tfc_device_matmul_t& p = key.product;
  // Row-major C (m x n) is column-major C^T (n x m) = op(B)^T op(A)^T: cuBLASLt's A is our B
  // (n x k; stored as our B's rows: k x n untransposed, so column-major n x k with ld n), its
  // B our A, and the bias runs down its m = our n.
  const int32_t opA = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t opB = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  TFC_RETURN_IF_ERROR(check(
      lt.cublasLtMatmulDescCreate(&plan->desc, p.tf32 && p.a_type == TFC_ABI_F32
                                                   ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                   : CUBLAS_COMPUTE_32F,
                                  CUDA_R_32F),
      "matmul descriptor"));
  auto setDesc = [&](cublasLtMatmulDescAttributes_t attribute, const auto& value) {
    return check(lt.cublasLtMatmulDescSetAttribute(plan->desc, attribute, &value, sizeof(value)),
                 "matmul descriptor attribute");
  };
  TFC_RETURN_IF_ERROR(setDesc(CUBLASLT_MATMUL_DESC_TRANSA, opA));
  TFC_RETURN_IF_ERROR(setDesc(CUBLASLT_MATMUL_DESC_TRANSB, opB));
  if (p.bias_type != 0) {
    TFC_RETURN_IF_ERROR(setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS));
    const int32_t biasType = libraryType(p.bias_type);
    TFC_RETURN_IF_ERROR(setDesc(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, biasType));
    TFC_RETURN_IF_ERROR(setDesc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias));
  }
  auto layout = [&](cublasLtMatrixLayout_t* out, int32_t type, int64_t rows, int64_t cols,
                    int64_t stride) -> Status {
    TFC_RETURN_IF_ERROR(check(lt.cublasLtMatrixLayoutCreate(out, libraryType(type),
                                                            static_cast<uint64_t>(rows),
                                                            static_cast<uint64_t>(cols), rows),
                              "matrix layout"));
    if (p.batch == 1) return Status();
    const int32_t count = static_cast<int32_t>(p.batch);
    TFC_RETURN_IF_ERROR(check(lt.cublasLtMatrixLayoutSetAttribute(
                                  *out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                              "matrix layout batch count"));
    return check(lt.cublasLtMatrixLayoutSetAttribute(
                     *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
                 "matrix layout batch stride");
  };
  // Stored column-major: our row-major B (k x n, or n x k transposed) is n x k (or k x n).
  TFC_RETURN_IF_ERROR(layout(&plan->a, p.b_type, p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k,
                             p.stride_b));
  TFC_RETURN_IF_ERROR(layout(&plan->b, p.a_type, p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m,
                             p.stride_a));
  TFC_RETURN_IF_ERROR(layout(&plan->c, p.c_type, p.n, p.m, p.m * p.n));

  cublasLtMatmulPreference_t preference = nullptr;
  TFC_RETURN_IF_ERROR(check(lt.cublasLtMatmulPreferenceCreate(&preference), "preference"));
  auto setPreference = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
    return check(
        lt.cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof(value)),
        "preference attribute");
  };
  const uint64_t workspace = kWorkspaceBytes;
  Status status = setPreference(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace);
  // cuBLASLt's A is our B and its B our A; C and D are one buffer.
  const uint32_t alignments[4] = {key.alignment[1], key.alignment[0], key.alignment[2],
                                  key.alignment[2]};
  const cublasLtMatmulPreferenceAttributes_t alignmentAttributes[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4 && status.ok(); ++i) {
    status = setPreference(alignmentAttributes[i], alignments[i]);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found_count = 0;
  if (status.ok()) {
    cublasStatus_t heuristic = lt.cublasLtMatmulAlgoGetHeuristic(
        handle_, plan->desc, plan->a, plan->b, plan->c, plan->c, preference, 1, &result,
        &found_count);
    // No algorithm for this product: not an error, the artifact's kernel runs it. A
    // refusal for another reason than NOT_SUPPORTED (a layout cuBLASLt finds invalid) is
    // said once, since it may hide a mistake of tfc's, and the kernel runs it too.
    plan->refused = heuristic != CUBLAS_STATUS_SUCCESS || found_count == 0 ||
                    result.state != CUBLAS_STATUS_SUCCESS;
    if (plan->refused && heuristic != CUBLAS_STATUS_SUCCESS &&
        heuristic != CUBLAS_STATUS_NOT_SUPPORTED) {
      std::fprintf(stderr, "tfc: %s: a product runs on tfc's kernel instead: %s\n",
                   path_.c_str(),
                   check(heuristic, fmt::format("heuristic for the product {}x{}x{} (batch {})",
                                                p.m, p.n, p.k, p.batch))
                       .message());
    }
  }
  lt.cublasLtMatmulPreferenceDestroy(preference);
  TFC_RETURN_IF_ERROR(std::move(status));
  plan->algo = result.algo;
  Plan* kept = plan.release();
  plans_[key] = kept;
  return kept;
}

bool LibraryProducts::run(const tfc_device_matmul_t& product, const void* a, const void* b,
                          void* c, const void* bias, CUstream stream, CUdeviceptr workspace,
                          Status* failure) {
  if (lt_ == nullptr || !supportedTypes(product) || product.batch < 1 ||
      product.batch > INT32_MAX || (product.bias_type != 0) != (bias != nullptr)) {
    return false;
  }
  if (handle_ == nullptr) {
    cublasStatus_t created = lt_->cublasLtCreate(&handle_);
    if (created != CUBLAS_STATUS_SUCCESS) {
      // A cuBLASLt that loads but cannot start on this GPU or driver: the products run on
      // tfc's kernels, as without one, and the user hears why once.
      handle_ = nullptr;
      summary_ = fmt::format(
          "tfc's kernels ({})",
          checkCublasLt(*lt_, created, lt_->path + ": cublasLtCreate").message());
      std::fprintf(stderr, "tfc: %s: products run on %s\n", path_.c_str(), summary_.c_str());
      lt_ = nullptr;
      return false;
    }
  }
  Key key{};
  key.product = product;
  key.alignment[0] = alignmentOf(a);
  key.alignment[1] = alignmentOf(b);
  key.alignment[2] = alignmentOf(c);
  key.alignment[3] = bias != nullptr ? alignmentOf(bias) : 0;
  auto made = plan(key, bias);
  if (!made.ok()) {
    *failure = std::move(made).takeStatus();
    return true;
  }
  Plan& plan = **made;
  if (plan.refused) return false;
  const CublasLt& lt = *lt_;
  if (bias != nullptr) {
    // The plan's descriptor is shared by the products of one shape; the bias is this one's.
    cublasStatus_t set = lt.cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
    if (set != CUBLAS_STATUS_SUCCESS) {
      *failure = checkCublasLt(lt, set, path_ + ": cuBLASLt bias pointer");
      return true;
    }
  }
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t status = lt.cublasLtMatmul(
      handle_, plan.desc, &one, b, plan.a, a, plan.b, &zero, c, plan.c, c, plan.c, &plan.algo,
      reinterpret_cast<void*>(workspace), kWorkspaceBytes, stream);
  if (status != CUBLAS_STATUS_SUCCESS) {
    *failure = checkCublasLt(
        lt, status,
        fmt::format("{}: cuBLASLt product {}x{}x{} (batch {})", path_, product.m, product.n,
                    product.k, product.batch));
  }
  ++count_;
  return true;
}

}  // namespace tfc::internal::cuda
