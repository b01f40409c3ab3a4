// Internal: the matrix products of a CUDA artifact on cuBLASLt (tfc_host_api_t.device_matmul).
//
// The compiled code offers each product (tfc_device_matmul_t, row-major) to the host before it
// launches its own kernel for it. LibraryProducts takes those that cuBLASLt runs: operands of
// one type, f32 -> f32 (exact, or TF32 when the artifact allows it), bf16 -> bf16 or f32,
// f16 -> f16 or f32, a bias of the result's type. It turns each into cuBLASLt's column-major
// terms (C^T = op(B)^T op(A)^T: the operands swap and the bias is per row of C^T), and keeps one
// plan per distinct product and operand alignment: the descriptors, the layouts and the
// algorithm cuBLASLt's heuristic chose, made at the product's first (eager) call and reused by
// later calls and by the CUDA graphs captured from them. Every plan shares one fixed workspace,
// so that graphs capture it.
//
// Which products take it: all, when a cuBLASLt loads (cublaslt.hpp) and TFC_CUDA_PRODUCTS is
// unset or "cublaslt"; none with TFC_CUDA_PRODUCTS=kernels (tfc's tensor-core kernels, to
// compare the two on one GPU). A product whose plan cuBLASLt refuses (no algorithm) runs on
// the artifact's kernel.
#ifndef TFC_RUNTIME_SRC_CUDA_PRODUCTS_HPP_
#define TFC_RUNTIME_SRC_CUDA_PRODUCTS_HPP_

#include <cstdint>
#include <map>
#include <string>

#include "devices/cuda/cublaslt.hpp"
#include "devices/cuda/driver.hpp"
#include "tfc/artifact_abi.h"
#include "tfc/runtime/status.hpp"

namespace tfc::internal::cuda {

class LibraryProducts {
 public:
  // The workspace every plan may use: NVIDIA's advice for Hopper (32 MiB).
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

  // Loads cuBLASLt unless TFC_CUDA_PRODUCTS says not to; |path| words errors.
  explicit LibraryProducts(std::string path);
  ~LibraryProducts();
  LibraryProducts(const LibraryProducts&) = delete;
  LibraryProducts& operator=(const LibraryProducts&) = delete;

  // Whether products are offered to cuBLASLt at all.
  bool enabled() const { return lt_ != nullptr; }
  // "cuBLASLt 13.1.0", or why tfc's kernels run the products.
  const std::string& summary() const { return summary_; }

  // Queues |product| on |stream| with the |workspace| of kWorkspaceBytes: true when cuBLASLt
  // took it (a failure is then in *failure), false when the caller must run its own kernel.
  bool run(const tfc_device_matmul_t& product, const void* a, const void* b, void* c,
           const void* bias, CUstream stream, CUdeviceptr workspace, Status* failure);

  // Products queued on cuBLASLt so far.
  int64_t count() const { return count_; }

 private:
  struct Plan;
  struct PlanDeleter {
    const CublasLt* lt;
    void operator()(Plan* plan) const;
  };
  // The cache key: the product and its operands' alignments (which the algorithm depends on).
  struct Key {
    tfc_device_matmul_t product;
    uint32_t alignment[4];  // a, b, c, bias
    bool operator<(const Key& other) const;
  };
  StatusOr<Plan*> plan(const Key& key, const void* bias);

  std::string path_;
  const CublasLt* lt_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;
  std::string summary_;
  std::map<Key, Plan*> plans_;
  int64_t count_ = 0;
};

}  // namespace tfc::internal::cuda

#endif  // TFC_RUNTIME_SRC_CUDA_PRODUCTS_HPP_
