// Internal: the pre-tokenization regular expressions of the BPE tokenizers, each matched by
// hand-written code (the runtime has no regex engine): GPT-2's, LLaMA 3's and Qwen2's.
// Each splits a text into pieces that cover it, as the successive matches of the pattern do
// (every character matches one of the alternatives of these patterns).
//
// \p{L} and \p{N} are Unicode's general categories L* and N*, \s is White_Space
// (unicode.hpp). Bytes that are not well-formed UTF-8 are each one character of class
// "other" (neither \s, \p{L} nor \p{N}), so any byte string is split.
#ifndef TFC_RUNTIME_SRC_SPLIT_PATTERNS_HPP_
#define TFC_RUNTIME_SRC_SPLIT_PATTERNS_HPP_

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace tfc::internal {

enum class SplitPattern {
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kGpt2,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  //   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kLlama3,
  // LLaMA 3's with \p{N} (one digit a piece) for \p{N}{1,3}.
  kQwen2,
};

// The pattern whose regular expression is exactly |regex| (as tokenizer.json writes it).
std::optional<SplitPattern> splitPatternOf(std::string_view regex);
// The regular expression of |pattern|.
std::string_view splitPatternRegex(SplitPattern pattern);

// Appends the end offset of each piece of |text| to |ends| (in order; the last is
// text.size() unless |text| is empty).
void splitByPattern(std::string_view text, SplitPattern pattern, std::vector<size_t>* ends);

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_SPLIT_PATTERNS_HPP_
