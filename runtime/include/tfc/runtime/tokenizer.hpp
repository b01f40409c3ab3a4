// Tokenizers of the runtime: what generation, `tfc-run tokenize` and embedders need of one
// (the Tokenizer interface), GPT-2's byte-level BPE from vocab.json and merges.txt, and the
// plain byte tokenizer. Hugging Face tokenizer.json files: hf_tokenizer.hpp.
//
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

// Text to token ids and back. Implementations are immutable after loading (apart from
// internal caches they guard), so one tokenizer may serve several threads at once.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The tokenizer |spec| names: "bytes" for ByteTokenizer (no files); a tokenizer.json file
  // or a folder with one for HfTokenizer (hf_tokenizer.hpp); else a folder with a GPT-2 BPE
  // tokenizer (vocab.json and merges.txt). A folder with both kinds of files is read as
  // tokenizer.json, which says more (normalization, added tokens). Errors name the file.
  static StatusOr<std::unique_ptr<Tokenizer>> load(const std::string& spec);

  // A short name of the kind, for messages: "bytes", "gpt2-bpe", "hf-bpe-bytelevel",
  // "hf-bpe-sentencepiece".
  virtual std::string_view kind() const = 0;
  // The ids of |text|. Adds no BOS/EOS.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // The ids of a prompt to generate from: bosId() (when there is one), then encode(text),
  // as the model saw texts in training.
  std::vector<int32_t> encodePrompt(std::string_view text) const;
  // The concatenated raw bytes of |count| tokens at |ids| (which may end inside a UTF-8
  // sequence). INVALID_ARGUMENT naming the id and its position when one is outside
  // [0, vocabSize()).
  virtual StatusOr<std::string> decode(const int32_t* ids, size_t count) const = 0;
  StatusOr<std::string> decode(const std::vector<int32_t>& ids) const {
    return decode(ids.data(), ids.size());
  }
  // The text of a whole sequence |ids|, as the tokenizer's reference library decodes it:
  // valid UTF-8 (ill-formed bytes replaced by U+FFFD), and for tokenizer.json decoders
  // what they do at the start of a text only (SentencePiece-style ones drop the space that
  // encoding put before the first word). For showing a finished text; streaming joins
  // decode()s.
  virtual StatusOr<std::string> decodeText(const std::vector<int32_t>& ids) const;
  // Ids are 0..vocabSize()-1.
  virtual int32_t vocabSize() const = 0;
  // The end-of-text token that stops generation, if the tokenizer has one.
  virtual std::optional<int32_t> eosId() const = 0;
  // The beginning-of-text token that the tokenizer's model expects before a text (LLaMA's
  // <s> or <|begin_of_text|>), if it has one; encode() does not add it.
  virtual std::optional<int32_t> bosId() const { return std::nullopt; }
  // The first offset p in [from, text.size()] at which |text| can be split without changing
  // its ids: encode(text[0, p)) followed by encode(text[p, end)) is encode(text).
  // text.size() when no such offset follows |from|. Lets a caller encode a long text in
  // pieces (to report progress and bound the encoder's working memory).
  virtual size_t nextSplit(std::string_view text, size_t from) const = 0;
};

// The byte-level tokenizer of byte-level models: token i is byte i (vocabSize() 256), any
// byte string is valid input, and there is no end-of-text token.
class ByteTokenizer final : public Tokenizer {
 public:
  std::string_view kind() const override { return "bytes"; }
  std::vector<int32_t> encode(std::string_view text) const override;
  using Tokenizer::decode;
  StatusOr<std::string> decode(const int32_t* ids, size_t count) const override;
  int32_t vocabSize() const override { return 256; }
  std::optional<int32_t> eosId() const override { return std::nullopt; }
  // Any offset: every byte is its own token.
  size_t nextSplit(std::string_view text, size_t from) const override {
    return from < text.size() ? from : text.size();
  }
};

class Gpt2Tokenizer final : public Tokenizer {
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
  ~Gpt2Tokenizer() override;

  std::string_view kind() const override { return "gpt2-bpe"; }
  // The ids of |text| (any bytes; see above for invalid UTF-8). Adds no BOS/EOS.
  std::vector<int32_t> encode(std::string_view text) const override;

  using Tokenizer::decode;
  StatusOr<std::string> decode(const int32_t* ids, size_t count) const override;

  // The number of entries in vocab.json (ids are 0..vocabSize()-1).
  int32_t vocabSize() const override;
  // The id of "<|endoftext|>", if the vocabulary has it.
  std::optional<int32_t> eosId() const override;
  // A space between two printable ASCII characters ("a b", split before the space).
  size_t nextSplit(std::string_view text, size_t from) const override;

  // |bytes| with every ill-formed UTF-8 subsequence replaced by U+FFFD, exactly as Python's
  // bytes.decode("utf-8", errors="replace") does (one U+FFFD per maximal subpart), i.e.
  // Hugging Face's decode() is replaceInvalidUtf8(decode(ids)).
  static std::string replaceInvalidUtf8(std::string_view bytes);
  // The byte offset of the first ill-formed UTF-8 sequence in |bytes| (the first byte that
  // replaceInvalidUtf8 would replace), or nullopt when |bytes| is well-formed UTF-8. For
  // callers that refuse such text instead of encoding its bytes one by one (tokenize).
  static std::optional<size_t> firstInvalidUtf8(std::string_view bytes);

 private:
  struct Impl;
  explicit Gpt2Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_TOKENIZER_HPP_
