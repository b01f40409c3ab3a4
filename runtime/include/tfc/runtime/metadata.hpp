// Reading an artifact's metadata JSON (tfc_artifact_metadata_json): {"model": "gpt2",
// "config": {"n_ctx": 64, "vocab_size": 50257, ...}}.
#ifndef TFC_RUNTIME_METADATA_HPP_
#define TFC_RUNTIME_METADATA_HPP_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tfc/runtime/communicator.hpp"
#include "tfc/runtime/runtime.hpp"

namespace tfc {

// The raw value of "key" in the metadata: a number's text or a string's contents; nullopt
// when absent. The metadata is flat apart from "config", and its keys are unique, so a scan
// suffices.
std::optional<std::string> metadataValue(const std::string& json, const std::string& key);
// The value of "key" as an integer; nullopt when absent or not an integer.
std::optional<int64_t> metadataInt(const std::string& json, const std::string& key);

// The model's vocabulary size: "vocab_size" in the metadata's config, else the last
// dimension of the forward entry's logits; 0 when neither is known.
int64_t modelVocabSize(const Artifact& artifact);

// Tensor parallelism (tfc --tp=M; artifact_abi.h's TFC_METADATA_TP_*): each of M
// consecutive ranks holds a slice of some parameters along |axis| of the whole tensor, which
// is |blocks| equal parts of which rank r holds the r-th M-th of each.
struct TensorSplit {
  int64_t axis = 0;
  int64_t blocks = 1;
};
struct TensorParallelLayout {
  int64_t size = 1;                           // M; 1: every tensor whole
  std::map<std::string, TensorSplit> splits;  // by parameter name

  // The split of parameter |name|, or of the parameter whose optimizer state |name| is
  // (opt.m.<p>, opt.v.<p>, opt.buf.<p>: tfc-train-step's names); null when whole.
  const TensorSplit* find(const std::string& name) const;
};
// The layout of an artifact's metadata; size 1 when it has none. Malformed: an error.
StatusOr<TensorParallelLayout> tensorParallelLayout(const std::string& json);
// Entries that each rank of a group runs one of. Pipeline parallelism (tfc --pp=S;
// artifact_abi.h's TFC_METADATA_PP_*): stage s runs "<entry>.stage<s>"; expert parallelism
// (tfc --ep=N; TFC_METADATA_EP_*): rank r runs "<entry>.ep<r>". |owner| names the parameters
// and states whose current value lives on one of them.
struct PipelineLayout {
  int64_t size = 1;                       // S (or N); 1: one entry for all
  std::string suffix = ".stage";          // of the entries' names, before the index
  std::map<std::string, int64_t> owner;   // tensor name -> its stage
  // Tensor name -> the stages that hold it, for those that some stage does not (pp_held).
  std::map<std::string, std::vector<int64_t>> held;

  // Whether the ranks of |stage| hold tensor |name| (allocate, initialize, load it).
  bool holds(const std::string& name, int64_t stage) const {
    auto it = held.find(name);
    if (it == held.end()) return true;
    for (int64_t s : it->second) {
      if (s == stage) return true;
    }
    return false;
  }

  // The entry a rank runs for |entry| ("train_step"): itself without stages.
  std::string entryOf(const std::string& entry, int64_t stage) const {
    return size > 1 ? entry + suffix + std::to_string(stage) : entry;
  }
};
// The layout of an artifact's metadata; size 1 when it has none. Malformed: an error.
StatusOr<PipelineLayout> pipelineLayout(const std::string& json);
// The same for expert parallelism (ep_size, ep_owner, ep_held; entries "<entry>.ep<r>",
// r the world rank).
StatusOr<PipelineLayout> expertLayout(const std::string& json);
// The mesh an artifact was compiled for: tp_size, pp_size and world_size (the replicas being
// the rest); one process where it has none. Malformed (a size below 1, a world that the
// stages and slices do not divide): an error.
StatusOr<ProcessMesh> processMesh(const std::string& json);
// The whole tensor's shape from the shape of one rank's slice.
std::vector<int64_t> wholeShape(const TensorSplit& split, std::vector<int64_t> sliceShape,
                                int64_t ranks);
// Copies rank |rank|'s slice of the whole tensor (of |whole_shape|, elements of
// |element_bytes|) from |whole| into |slice| (to_slice) or back.
void copySlice(const TensorSplit& split, const std::vector<int64_t>& whole_shape, int64_t ranks,
               int64_t rank, size_t element_bytes, void* whole, void* slice, bool to_slice);

}  // namespace tfc

#endif  // TFC_RUNTIME_METADATA_HPP_
