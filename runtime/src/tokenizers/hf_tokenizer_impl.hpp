// Internal: the parts of an HfTokenizer (hf_tokenizer.hpp) as loaded from a tokenizer.json:
// shared by hf_tokenizer_load.cpp, which reads the file, and hf_tokenizer.cpp, which encodes
// and decodes with them.
#ifndef TFC_RUNTIME_SRC_HF_TOKENIZER_IMPL_HPP_
#define TFC_RUNTIME_SRC_HF_TOKENIZER_IMPL_HPP_

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizers/bpe.hpp"
#include "tokenizers/split_patterns.hpp"
#include "tfc/runtime/hf_tokenizer.hpp"

namespace tfc {
namespace internal::hf {

// Metaspace's prepend_scheme.
enum class PrependScheme { kAlways, kFirst, kNever };

struct AddedToken {
  int32_t id = 0;
  std::string content;  // as matched: normalized when |normalized|
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool singleWord = false;
  bool normalized = false;
};

struct NormalizerStep {
  enum Kind { kNfc, kPrepend, kReplace } kind;
  std::string pattern;  // kReplace: what to replace
  std::string content;  // kPrepend: what to prepend; kReplace: the replacement
};

struct PreTokenizerStep {
  enum Kind {
    kByteLevel,
    kSplit,
    kSplitString,
    kMetaspace,
    kDigits,
    kPunctuation
  } kind = kByteLevel;
  // What becomes of the delimiters a split finds (`tokenizers`' SplitDelimiterBehavior).
  enum class Behavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };
  // kSplit (always kIsolated), kSplitString, kPunctuation
  Behavior behavior = Behavior::kIsolated;
  std::string literal;          // kSplitString: the delimiter
  bool addPrefixSpace = false;  // kByteLevel
  bool useRegex = true;         // kByteLevel: split by GPT-2's pattern first
  internal::SplitPattern pattern = internal::SplitPattern::kGpt2;  // kSplit
  std::string replacement;                                         // kMetaspace
  PrependScheme prependScheme = PrependScheme::kAlways;
  bool split = true;              // kMetaspace: split before each replacement character
  bool individualDigits = false;  // kDigits: each digit a piece (else each run of digits)
};

struct DecoderStep {
  enum Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace } kind = kFuse;
  std::string pattern, content;  // kReplace
  uint32_t stripChar = ' ';      // kStrip
  size_t start = 0, stop = 0;    // kStrip
  std::string replacement;       // kMetaspace
  PrependScheme prependScheme = PrependScheme::kAlways;
};

// A piece of text on its way through the pipeline; |atStart| when it begins at offset 0 of
// the original text (Metaspace's prepend_scheme "first" asks).
struct Piece {
  std::string text;
  bool atStart;
};

}  // namespace internal::hf

struct HfTokenizer::Impl {
  using AddedToken = internal::hf::AddedToken;
  using NormalizerStep = internal::hf::NormalizerStep;
  using PreTokenizerStep = internal::hf::PreTokenizerStep;
  using DecoderStep = internal::hf::DecoderStep;
  using Piece = internal::hf::Piece;

  // The model.
  std::unordered_map<std::string, int32_t> vocab;  // model vocabulary and added tokens
  std::vector<std::string> idToToken;
  std::vector<bool> hasToken;  // ids without a token are holes
  // Ids of model.vocab: the BPE model sees those only (|vocab| has the added tokens too).
  std::vector<bool> inModel;
  internal::BpeMerges merges;
  // Ids that are a part of some merge; the others never merge with a neighbour.
  std::vector<bool> mergeable;
  bool byteFallback = false;
  bool ignoreMerges = false;
  bool fuseUnk = false;
  std::optional<int32_t> unkId;
  std::array<int32_t, 256> byteFallbackIds{};  // <0xAB> -> id, -1 when absent

  std::vector<AddedToken> addedTokens;  // by decreasing length of content
  // [normalized][first byte]: the indices in addedTokens of the tokens that start with the
  // byte, so that most text positions are passed over with one lookup.
  std::array<std::vector<uint32_t>, 256> addedByFirstByte[2];
  std::vector<NormalizerStep> normalizer;
  std::vector<PreTokenizerStep> preTokenizer;
  std::vector<DecoderStep> decoder;
  std::optional<int32_t> bos, eos;
  bool byteLevel = false;   // a ByteLevel decoder
  bool splittable = false;  // nextSplit may split after newlines

  internal::BpeWordCache wordCache;

  // Splits |text| at the matches of the added tokens whose |normalized| is |normalized|:
  // calls onText(begin, end) for text between matches and onToken(id) for matches.
  template <typename OnText, typename OnToken>
  void splitAdded(std::string_view text, bool normalized, OnText&& onText, OnToken&& onToken) const;
  std::string normalize(std::string text) const;
  void preTokenize(std::vector<Piece>* pieces) const;
  void tokenizeWord(std::string_view word, std::vector<int32_t>* out) const;
  void mergeWord(std::string_view word, std::vector<int32_t>* out) const;
  // The id of |token| in model.vocab, or -1.
  int32_t modelId(const std::string& token) const {
    auto it = vocab.find(token);
    return it != vocab.end() && static_cast<size_t>(it->second) < inModel.size() &&
                   inModel[it->second]
               ? it->second
               : -1;
  }
  std::string decodeTokens(const int32_t* ids, size_t count, bool wholeText) const;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_SRC_HF_TOKENIZER_IMPL_HPP_
