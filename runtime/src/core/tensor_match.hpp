// Internal: binding tensor descriptions (an artifact's parameters or state) to the tensors of
// a checkpoint by name, with every check a load makes before it changes anything: the name,
// the dtype and the shape. One function serves the strict loads (one safetensors file whose
// names, dtypes and shapes must be the artifact's) and the load of a Hugging Face checkpoint
// (shards, dtypes converted, a leading prefix dropped, other tensors skipped), so that both
// say the same things the same way.
#ifndef TFC_RUNTIME_SRC_TENSOR_MATCH_HPP_
#define TFC_RUNTIME_SRC_TENSOR_MATCH_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "tfc/artifact_abi.h"
#include "tfc/runtime/safetensors.hpp"
#include "tfc/runtime/status.hpp"

namespace tfc::internal {

// Problems found checking a checkpoint, reported together as one status: the first
// problem's code, and the list (at most 20 shown) after |where|.
class ProblemList {
 public:
  void add(tfc_status_code_t code, std::string text) {
    if (code_ == TFC_OK) code_ = code;
    texts_.push_back(std::move(text));
  }
  bool empty() const { return texts_.empty(); }

  Status status(const std::string& where) const {
    std::string message = where + ": ";
    if (texts_.size() == 1) {
      message += texts_[0];
    } else {
      message += std::to_string(texts_.size()) + " problems:";
      constexpr size_t kMaxListed = 20;
      for (size_t i = 0; i < texts_.size() && i < kMaxListed; ++i) message += "\n  " + texts_[i];
      if (texts_.size() > kMaxListed) {
        message += "\n  ... and " + std::to_string(texts_.size() - kMaxListed) + " more";
      }
    }
    return Status(code_, message);
  }

 private:
  tfc_status_code_t code_ = TFC_OK;
  std::vector<std::string> texts_;
};

// A tensor of a checkpoint. |file| is the file that holds it, named in problems about it;
// null when the checkpoint is one file, which the message's prefix names already.
struct SourceTensor {
  const SafetensorsTensorInfo* info = nullptr;
  const std::string* file = nullptr;
};

// What a match accepts besides equal names, dtypes and shapes.
struct MatchRules {
  // Descriptions without a tensor are left unbound (null) instead of being a problem.
  bool allowMissing = false;
  // Tensors that no description takes are returned in TensorMatch::unbound instead of being
  // a problem.
  bool allowUnexpected = false;
  // A tensor of F32, BF16 or F16 binds a description of any of the three (the caller
  // converts); other dtypes must be equal.
  bool convertFloats = false;
  // A tensor "P.N" binds the description "N" when no tensor is called "N" and P is one
  // non-empty component without dots ("transformer." of GPT-2's checkpoints). Two such
  // tensors for one description are a problem.
  bool dropPrefix = false;
};

struct TensorMatch {
  // Per description, the tensor bound to it; null when missing (only with allowMissing).
  std::vector<const SourceTensor*> sources;
  // The tensors bound to no description, in the order of |tensors| (only with
  // allowUnexpected; otherwise each is a problem).
  std::vector<const SourceTensor*> unbound;
};

// Binds |count| descriptions |descs| to |tensors| (whose names must be distinct) under
// |rules|. Every problem goes into one error whose message starts with |where| (the file,
// or the directory or index of a sharded checkpoint) and lists them all; |what| names the
// descriptions ("parameter", "state tensor").
StatusOr<TensorMatch> matchTensors(const std::string& where, const std::vector<SourceTensor>& tensors,
                                   const tfc_tensor_desc_t* descs, int32_t count, const char* what,
                                   const MatchRules& rules);

// matchTensors for the tensors of one file with equal dtypes and exact names: for each
// description, the file's tensor (null when the file lacks it and |allowMissing|).
StatusOr<std::vector<const SafetensorsTensorInfo*>> matchSafetensors(
    const SafetensorsFile& file, const tfc_tensor_desc_t* descs, int32_t count, const char* what,
    bool allowMissing, bool allowUnexpected);

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_TENSOR_MATCH_HPP_
