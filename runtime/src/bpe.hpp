// Internal: the byte-pair merge loop shared by the GPT-2 (vocab.json + merges.txt) and the
// Hugging Face (tokenizer.json) BPE tokenizers.
#ifndef TFC_RUNTIME_SRC_BPE_HPP_
#define TFC_RUNTIME_SRC_BPE_HPP_

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tfc::internal {

struct BpeMerge {
  int32_t rank;
  int32_t merged;  // the id of the merged token
};

// The merges by pair of ids (bpePairKey(left, right)).
using BpeMerges = std::unordered_map<uint64_t, BpeMerge>;

inline uint64_t bpePairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// Merges the symbols |ids| (a word's initial tokens) by |merges| and appends the result to
// |out|: repeatedly the adjacent pair of the lowest rank is merged, all its occurrences left
// to right without overlaps. This is GPT-2's bpe() and, for merge lists in which every
// merge's parts come from earlier merges (all trained ones), Hugging Face's Word::merge_all.
void bpeMerge(std::vector<int32_t> ids, const BpeMerges& merges, std::vector<int32_t>* out);

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_BPE_HPP_
