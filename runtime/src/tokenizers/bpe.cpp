#include "tokenizers/bpe.hpp"

#include <functional>
#include <queue>

namespace tfc::internal {

// A heap of candidate pairs makes this O(n log n): all of the lowest rank's entries are
// taken out before any merge, so that pairs formed by this round's merges wait for the next
// round even when their rank is lower (as in GPT-2's bpe()).
void bpeMerge(std::vector<int32_t> ids, const BpeMerges& merges, std::vector<int32_t>* out) {
  const int32_t n = static_cast<int32_t>(ids.size());
  if (n == 0) return;
  std::vector<int32_t> next(n), prev(n);
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int32_t left;  // symbol index
    int32_t leftId;
    int32_t rightId;
    int32_t merged;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : left > other.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto consider = [&](int32_t left) {
    if (left < 0 || next[left] < 0) return;
    int32_t right = next[left];
    auto it = merges.find(bpePairKey(ids[left], ids[right]));
    if (it != merges.end()) {
      heap.push({it->second.rank, left, ids[left], ids[right], it->second.merged});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);

  std::vector<Candidate> round;
  while (!heap.empty()) {
    int32_t rank = heap.top().rank;
    round.clear();
    while (!heap.empty() && heap.top().rank == rank) {  // in order of position
      round.push_back(heap.top());
      heap.pop();
    }
    for (const Candidate& candidate : round) {
      int32_t left = candidate.left;
      int32_t right = next[left];
      // Stale when either symbol has been merged since the candidate was pushed (a merged
      // symbol gets a new id; an absorbed one gets -1).
      if (ids[left] != candidate.leftId || right < 0 || ids[right] != candidate.rightId) continue;
      ids[left] = candidate.merged;
      ids[right] = -1;
      next[left] = next[right];
      if (next[right] >= 0) prev[next[right]] = left;
    }
    for (const Candidate& candidate : round) {
      int32_t left = candidate.left;
      if (ids[left] != candidate.merged) continue;
      if (prev[left] >= 0) consider(prev[left]);
      consider(left);
    }
  }
  for (int32_t i = 0; i >= 0; i = next[i]) out->push_back(ids[i]);
}

}  // namespace tfc::internal
