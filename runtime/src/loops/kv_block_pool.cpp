#include "loops/kv_block_pool.hpp"

#include <cstring>

namespace tfc::internal {

KvBlockPool::KvBlockPool(int64_t blocks, int64_t blockSize)
    : blockSize_(blockSize),
      refs_(static_cast<size_t>(blocks), 0),
      lastUse_(static_cast<size_t>(blocks), 0),
      keyOf_(static_cast<size_t>(blocks)) {
  // Lowest ids first out of the free stack.
  for (int64_t id = blocks - 1; id >= 0; --id) free_.push_back(static_cast<int32_t>(id));
}

// The whole prefix, not a hash of it: two different prefixes never share a block.
std::string KvBlockPool::key(const std::vector<int32_t>& tokens, int64_t end) {
  std::string k(static_cast<size_t>(end) * sizeof(int32_t), '\0');
  std::memcpy(k.data(), tokens.data(), k.size());
  return k;
}

std::vector<int32_t> KvBlockPool::matchPrefix(const std::vector<int32_t>& tokens,
                                              int64_t maxBlocks) {
  std::vector<int32_t> matched;
  for (int64_t i = 0; i < maxBlocks; ++i) {
    const int64_t end = (i + 1) * blockSize_;
    if (end > static_cast<int64_t>(tokens.size())) break;
    auto it = byPrefix_.find(key(tokens, end));
    if (it == byPrefix_.end()) break;
    const int32_t id = it->second;
    if (refs_[id]++ == 0) {
      lru_.erase({lastUse_[id], id});
      ++used_;
    }
    lastUse_[id] = ++clock_;
    matched.push_back(id);
  }
  return matched;
}

std::optional<int32_t> KvBlockPool::allocate() {
  int32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    id = lru_.begin()->second;
    lru_.erase(lru_.begin());
    forget(id);
  } else {
    return std::nullopt;
  }
  refs_[id] = 1;
  lastUse_[id] = ++clock_;
  ++used_;
  return id;
}

void KvBlockPool::release(int32_t id) {
  if (--refs_[id] > 0) return;
  --used_;
  if (keyOf_[id].empty()) {
    free_.push_back(id);
  } else {
    lru_.insert({lastUse_[id], id});
  }
}

void KvBlockPool::publish(int32_t id, const std::vector<int32_t>& tokens, int64_t end) {
  if (!keyOf_[id].empty()) return;
  std::string k = key(tokens, end);
  if (byPrefix_.count(k)) return;
  byPrefix_.emplace(k, id);
  keyOf_[id] = std::move(k);
}

void KvBlockPool::forget(int32_t id) {
  byPrefix_.erase(keyOf_[id]);
  keyOf_[id].clear();
}

}  // namespace tfc::internal
