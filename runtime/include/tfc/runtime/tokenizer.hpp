// GPT-2's byte-level BPE tokenizer, behaving as Hugging Face's GPT2Tokenizer and OpenAI's
// encoder.py do: text is split by GPT-2's pre-tokenization pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// each piece's UTF-8 bytes are mapped to the printable stand-ins of bytes_to_unicode(), and
// the pieces are merged by the ranks in merges.txt. "<|endoftext|>" in the text, when the
// vocabulary has it, is one token and is never split or merged with its neighbours.
//
// Differences from Hugging Face, all on inputs that Python never produces or on quirks:
// - Bytes that are not valid UTF-8 are each treated as one "other" character (like
//   punctuation) and encoded by their own byte token, so any byte string round-trips.
// - decode() returns the tokens' raw bytes (what streaming output needs); Hugging Face's
//   decode() replaces invalid UTF-8 by U+FFFD, which replaceInvalidUtf8() reproduces.
//   Hugging Face's optional clean_up_tokenization_spaces is not applied.
// - merges.txt: only a first line starting with "#version" is skipped (Hugging Face drops
//   the first line whatever it is, and the last one when the file lacks a final newline).
//
// Thread-safety: a loaded tokenizer is immutable apart from an internal cache guarded by a
// mutex; encode() and decode() may be called from several threads at once.
#ifndef TFC_RUNTIME_TOKENIZER_HPP_
#define TFC_RUNTIME_TOKENIZER_HPP_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tfc/runtime/status.hpp"

namespace tfc {

class Gpt2Tokenizer {
 public:
  // The special token kept whole by encode().
  static constexpr std::string_view kEndOfText = "<|endoftext|>";

  // Loads DIR/vocab.json (a JSON object: token string -> id) and DIR/merges.txt (one merge
  // "a b" per line, in rank order, after an optional "#version" line). The ids must be
  // 0..N-1, each used once; every byte's token and every merge's parts and result must be
  // in the vocabulary. Errors name the file and, for malformed contents, the line:
  // NOT_FOUND for a missing file, DATA_LOSS for malformed contents.
  static StatusOr<Gpt2Tokenizer> load(const std::string& dir);

  // Same, from the files' contents; |vocabName| and |mergesName| name them in errors.
  static StatusOr<Gpt2Tokenizer> fromContents(std::string_view vocabJson,
                                              std::string_view mergesText,
                                              const std::string& vocabName,
                                              const std::string& mergesName);

  Gpt2Tokenizer(Gpt2Tokenizer&&) noexcept;
  Gpt2Tokenizer& operator=(Gpt2Tokenizer&&) noexcept;
  Gpt2Tokenizer(const Gpt2Tokenizer&) = delete;
  Gpt2Tokenizer& operator=(const Gpt2Tokenizer&) = delete;
  ~Gpt2Tokenizer();

  // The ids of |text| (any bytes; see above for invalid UTF-8). Adds no BOS/EOS.
  std::vector<int32_t> encode(std::string_view text) const;

  // The concatenated raw bytes of the tokens |ids| (which may end inside a UTF-8
  // sequence). INVALID_ARGUMENT naming the id when one is outside [0, vocabSize()).
  StatusOr<std::string> decode(const std::vector<int32_t>& ids) const;
  StatusOr<std::string> decode(const int32_t* ids, size_t count) const;

  // The number of entries in vocab.json (ids are 0..vocabSize()-1).
  int32_t vocabSize() const;
  // The id of "<|endoftext|>", if the vocabulary has it.
  std::optional<int32_t> eosId() const;

  // |bytes| with every ill-formed UTF-8 subsequence replaced by U+FFFD, exactly as Python's
  // bytes.decode("utf-8", errors="replace") does (one U+FFFD per maximal subpart), i.e.
  // Hugging Face's decode() is replaceInvalidUtf8(decode(ids)).
  static std::string replaceInvalidUtf8(std::string_view bytes);

 private:
  struct Impl;
  explicit Gpt2Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_TOKENIZER_HPP_
