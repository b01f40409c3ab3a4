// Token data for training (tfc::Trainer, `tfc-run train`): flat token files (nanoGPT /
// llm.c .bin, .npy) and a seeded, resumable batch sampler that draws batches as nanoGPT's
// get_batch() does. The llm.c header constants below are the ones any writer of such files
// (`tfc-run tokenize`) uses.
#ifndef TFC_RUNTIME_TOKEN_DATA_HPP_
#define TFC_RUNTIME_TOKEN_DATA_HPP_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "tfc/runtime/status.hpp"

namespace tfc {

// The element type of a headerless token file.
enum class TokenFileDtype { kUint16, kUint32 };

// llm.c's data files start with 256 int32: magic 20240520, version (1: uint16 tokens,
// 2: uint32 tokens), the token count, then zeros; the tokens follow.
constexpr int32_t kLlmcMagic = 20240520;
constexpr size_t kLlmcHeaderBytes = 256 * sizeof(int32_t);

// A read-only sequence of token ids held in memory (a mapped .bin or a loaded .npy).
class TokenData {
 public:
  // Opens |path|: a .npy file (a 1-D array of any integer dtype), an llm.c .bin (detected
  // by its magic) or else a headerless little-endian file of |dtype| elements. Errors name
  // the file: missing, a size that is not a whole number of tokens, a bad header, a .npy
  // that is not a 1-D integer array.
  static StatusOr<TokenData> open(const std::string& path, TokenFileDtype dtype);
  // The parser behind open(): |size| bytes at |bytes| as the file |path| (its name decides
  // .npy or .bin); a .bin's tokens stay at |bytes|, which |owner| keeps alive. Separate so
  // that the parser can be tested and fuzzed without files (runtime/fuzz).
  static StatusOr<TokenData> parse(const uint8_t* bytes, size_t size, const std::string& path,
                                   TokenFileDtype dtype, std::shared_ptr<const void> owner);

  const std::string& path() const { return path_; }
  size_t size() const { return count_; }
  // A short description for logs: "uint16 .bin, 1,234,567 tokens".
  std::string describe() const;

  uint64_t at(size_t index) const {
    const uint8_t* p = data_ + index * elementSize_;
    switch (kind_) {
      case Kind::kU8: return p[0];
      case Kind::kU16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
      case Kind::kU32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
      case Kind::kU64: { uint64_t v; std::memcpy(&v, p, 8); return v; }
      case Kind::kI8: return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(p[0])));
      case Kind::kI16: { int16_t v; std::memcpy(&v, p, 2); return static_cast<uint64_t>(static_cast<int64_t>(v)); }
      case Kind::kI32: { int32_t v; std::memcpy(&v, p, 4); return static_cast<uint64_t>(static_cast<int64_t>(v)); }
      case Kind::kI64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<uint64_t>(v); }
    }
    return 0;
  }

  // Checks every token id is in [0, vocab): the error names the file, the first offending
  // offset (in tokens) and its value.
  Status checkVocab(int64_t vocab) const;
  // Checks the file holds at least |seq| + 1 tokens (one batch row and its shifted target).
  Status checkLength(int64_t seq) const;

 private:
  enum class Kind { kU8, kU16, kU32, kU64, kI8, kI16, kI32, kI64 };
  TokenData() = default;

  std::string path_;
  std::string format_;
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  size_t count_ = 0;
  size_t elementSize_ = 0;
  Kind kind_ = Kind::kU16;
};

// SplitMix64: tiny, fast, and its whole state is one uint64 (easy to checkpoint).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed = 0) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound >= 1 (Lemire's method with rejection, unbiased).
  uint64_t below(uint64_t bound);
  uint64_t state() const { return state_; }
  void setState(uint64_t state) { state_ = state; }

 private:
  uint64_t state_;
};

// Draws batches like nanoGPT's get_batch: for each row an offset i uniform in
// [0, len - T - 1), x = data[i : i+T], y = data[i+1 : i+T+1]. The sampler's position
// (RNG state and number of batches drawn) is saved in checkpoints so a resumed run draws
// exactly the batches an uninterrupted one would.
class BatchSampler {
 public:
  // Data parallel (|world| > 1): every rank draws the same global batch of world * batch rows
  // from the same seed and keeps its own slice, rows [rank * batch, (rank + 1) * batch). So
  // N ranks of batch B see exactly the batch one process of batch N * B would, which is what
  // makes their mean gradient equal to that process's (llm.c's convention: each rank reads
  // its own part of the data; the global batch is N x the compiled per-rank batch).
  BatchSampler(const TokenData* data, int64_t batch, int64_t seq, uint64_t seed, int rank = 0,
               int world = 1)
      : data_(data), batch_(batch), seq_(seq), rank_(rank), world_(world), rng_(seed) {}

  // Fills x and y (each batch * seq int32).
  void next(int32_t* x, int32_t* y);

  uint64_t rngState() const { return rng_.state(); }
  uint64_t batchesDrawn() const { return drawn_; }
  void restore(uint64_t rngState, uint64_t batchesDrawn) {
    rng_.setState(rngState);
    drawn_ = batchesDrawn;
  }

 private:
  const TokenData* data_;
  int64_t batch_, seq_;
  int rank_, world_;
  SplitMix64 rng_;
  uint64_t drawn_ = 0;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_TOKEN_DATA_HPP_
