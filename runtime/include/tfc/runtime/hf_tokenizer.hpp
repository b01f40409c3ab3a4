// Hugging Face tokenizers from a tokenizer.json (the `tokenizers` library's file), for the
// BPE models people bring: byte-level BPE (GPT-2, LLaMA 3, Qwen2) and SentencePiece-style
// BPE with byte fallback (LLaMA 2, Mistral). encode() gives the ids of the `tokenizers`
// library's encode(text, add_special_tokens=False); decodeText() its
// decode(ids, skip_special_tokens=False).
//
// Supported contents (anything else is refused, naming the file and the JSON path):
// - model: BPE with vocab, merges ("a b" strings or [a, b] pairs), byte_fallback,
//   unk_token, fuse_unk, ignore_merges, dropout null (continuing_subword_prefix and
//   end_of_word_suffix must be unset).
// - normalizer: null, NFC, Prepend, Replace (string pattern), Sequence of those.
// - pre_tokenizer: null, ByteLevel (add_prefix_space, use_regex: GPT-2's pattern),
//   Split (not inverted) by a regex with behavior Isolated (GPT-2's, LLaMA 3's or Qwen2's,
//   recognized by its exact text) or by a string with any behavior (Gemma), Metaspace (replacement, prepend_scheme,
//   split), Digits (individual_digits), Punctuation (behavior), Sequence of those.
// - added_tokens: matched in the raw text (normalized: false) or in the normalized text
//   (normalized: true), leftmost-longest, honoring lstrip, rstrip and single_word.
// - decoder: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence of those.
// - post_processor: null, ByteLevel, TemplateProcessing, RobertaProcessing, Sequence:
//   only for bosId() (encode() adds no special tokens).
//
// Differences from the `tokenizers` library, on inputs Python never produces:
// - Bytes that are not valid UTF-8 are each one character (of class "other"), encoded by
//   their byte's token, so any byte string can be encoded.
// - decode() returns raw bytes and is concatenative (decoding token by token gives the
//   same bytes as decoding all at once), as streaming output needs: it leaves out what the
//   decoder does at the start of a text only (Strip's leading cut, Metaspace's first
//   token) and keeps bytes of byte-fallback tokens that are not valid UTF-8 as they are.
//   decodeText() does all of it as `tokenizers` does.
// - Added tokens have the ids the file gives them. `tokenizers` renumbers those that are
//   not in model.vocab to follow its size, which in real files gives the same ids.
// - single_word's word characters are letters, digits and '_' (`tokenizers`: \w).
//
// Thread-safety: immutable after loading; encode() and decode() may run on several threads.
#ifndef TFC_RUNTIME_HF_TOKENIZER_HPP_
#define TFC_RUNTIME_HF_TOKENIZER_HPP_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tfc/runtime/status.hpp"
#include "tfc/runtime/tokenizer.hpp"

namespace tfc {

class HfTokenizer final : public Tokenizer {
 public:
  // The contents of the files of a tokenizer and their names (for messages); the two
  // configuration files are optional (empty contents when absent) and give eosId().
  struct Files {
    std::string_view tokenizerJson;
    std::string tokenizerJsonName = "tokenizer.json";
    std::string_view tokenizerConfig;  // tokenizer_config.json
    std::string tokenizerConfigName = "tokenizer_config.json";
    std::string_view generationConfig;  // generation_config.json
    std::string generationConfigName = "generation_config.json";
  };

  // |path|: a tokenizer.json file, or a folder with one (and optionally
  // tokenizer_config.json and generation_config.json next to it). NOT_FOUND for a missing
  // file, DATA_LOSS for malformed contents, UNIMPLEMENTED for what is not supported; the
  // message names the file and the place (line:column and JSON path).
  static StatusOr<HfTokenizer> load(const std::string& path);
  static StatusOr<HfTokenizer> fromContents(const Files& files);

  HfTokenizer(HfTokenizer&&) noexcept;
  HfTokenizer& operator=(HfTokenizer&&) noexcept;
  HfTokenizer(const HfTokenizer&) = delete;
  HfTokenizer& operator=(const HfTokenizer&) = delete;
  ~HfTokenizer() override;

  // "hf-bpe-bytelevel" (a ByteLevel decoder) or "hf-bpe-sentencepiece" (the others).
  std::string_view kind() const override;
  std::vector<int32_t> encode(std::string_view text) const override;
  using Tokenizer::decode;
  StatusOr<std::string> decode(const int32_t* ids, size_t count) const override;
  StatusOr<std::string> decodeText(const std::vector<int32_t>& ids) const override;
  // One more than the largest id of the vocabulary and the added tokens.
  int32_t vocabSize() const override;
  // From tokenizer_config.json's eos_token, else generation_config.json's eos_token_id
  // (the first, when a list), else the first token of <|endoftext|>, </s>,
  // <|end_of_text|> and <|im_end|> that the tokenizer has.
  std::optional<int32_t> eosId() const override;
  // The special token the post-processor puts before a single text (LLaMA's <s>,
  // <|begin_of_text|>), if it puts one.
  std::optional<int32_t> bosId() const override;
  // Conservative: right after a "\n" that is preceded and followed by a letter or digit
  // of ASCII, outside added tokens, when the tokenizer has no normalizer or pre-tokenizer
  // step that looks across a newline (see hf_tokenizer.cpp); else text.size().
  size_t nextSplit(std::string_view text, size_t from) const override;

  // The id of the token |token| (an added token or a vocabulary entry), for tests.
  std::optional<int32_t> tokenId(std::string_view token) const;

  struct Impl;  // hf_tokenizer.cpp's

 private:
  explicit HfTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_HF_TOKENIZER_HPP_
