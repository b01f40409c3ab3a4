// Internal: the byte-pair merge loop shared by the GPT-2 (vocab.json + merges.txt) and the
// Hugging Face (tokenizer.json) BPE tokenizers.
#ifndef TFC_RUNTIME_SRC_BPE_HPP_
#define TFC_RUNTIME_SRC_BPE_HPP_

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
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

// The tokens of words already merged, for the words short enough to be worth it: running
// text repeats its words, and merging is the encoder's cost. Bounded (emptied when full);
// safe to use from several threads at once.
class BpeWordCache {
 public:
  // Appends |word|'s tokens to |out| from the cache, or by |merge|(word, out) and keeps them.
  template <typename Merge>
  void tokens(std::string_view word, std::vector<int32_t>* out, Merge&& merge) const {
    const bool cacheable = word.size() <= kMaxWordBytes;
    if (cacheable) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = words_.find(std::string(word));
      if (it != words_.end()) {
        out->insert(out->end(), it->second.begin(), it->second.end());
        return;
      }
    }
    const size_t start = out->size();
    merge(word, out);
    if (cacheable) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (words_.size() >= kMaxEntries) words_.clear();
      words_.emplace(std::string(word), std::vector<int32_t>(out->begin() + start, out->end()));
    }
  }

 private:
  static constexpr size_t kMaxWordBytes = 128;
  static constexpr size_t kMaxEntries = 1 << 16;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> words_;
};

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_BPE_HPP_
