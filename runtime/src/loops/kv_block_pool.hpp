// The blocks of a paged KV cache (tfc --set kv_block=S): which sequence holds which block,
// and prefix caching: a full block whose tokens are known stays in the pool after its
// sequence ends, and a later sequence whose prompt starts with the same tokens reuses it
// instead of recomputing it (vLLM's automatic prefix caching). One thread uses a pool.
#ifndef TFC_RUNTIME_KV_BLOCK_POOL_HPP_
#define TFC_RUNTIME_KV_BLOCK_POOL_HPP_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace tfc::internal {

class KvBlockPool {
 public:
  KvBlockPool(int64_t blocks, int64_t blockSize);

  int64_t blocks() const { return static_cast<int64_t>(refs_.size()); }
  int64_t blockSize() const { return blockSize_; }
  // Blocks some sequence holds.
  int64_t used() const { return used_; }
  // Blocks no sequence holds that keep a published prefix (reusable, evicted last).
  int64_t cached() const { return static_cast<int64_t>(lru_.size()); }
  // Blocks allocate() can hand out now: free ones and cached ones.
  int64_t available() const { return blocks() - used_; }

  // The cached blocks holding tokens[0, k * S) for the largest k <= maxBlocks, each with one
  // reference taken for the caller.
  std::vector<int32_t> matchPrefix(const std::vector<int32_t>& tokens, int64_t maxBlocks);
  // A block with one reference: a free one, else the least recently used cached one (its
  // prefix forgotten); none when every block is held.
  std::optional<int32_t> allocate();
  // Drops one reference; a block with none left stays cached if published, else is free.
  void release(int32_t id);
  // Records that block `id`, full, holds tokens [end - S, end) after tokens[0, end - S):
  // a later matchPrefix of the same tokens may reuse it. A prefix some other block already
  // holds is left to that block.
  void publish(int32_t id, const std::vector<int32_t>& tokens, int64_t end);

 private:
  static std::string key(const std::vector<int32_t>& tokens, int64_t end);
  void forget(int32_t id);

  int64_t blockSize_;
  int64_t used_ = 0;
  uint64_t clock_ = 0;
  std::vector<int32_t> refs_;
  std::vector<uint64_t> lastUse_;
  std::vector<std::string> keyOf_;  // the prefix a published block holds; empty if none
  std::vector<int32_t> free_;       // unpublished blocks nobody holds
  std::set<std::pair<uint64_t, int32_t>> lru_;  // published blocks nobody holds, by last use
  std::unordered_map<std::string, int32_t> byPrefix_;
};

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_KV_BLOCK_POOL_HPP_
