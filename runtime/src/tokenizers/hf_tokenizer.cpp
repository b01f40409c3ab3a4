// Encoding and decoding with a loaded HfTokenizer: added tokens, normalizer, pre-tokenizer
// and BPE model on the way in, the decoder on the way out (hf_tokenizer_load.cpp reads the
// file).
#include "tfc/runtime/hf_tokenizer.hpp"

#include <algorithm>
#include <array>
#include <mutex>
#include <utility>

#include "tokenizers/hf_tokenizer_impl.hpp"
#include "base/unicode.hpp"

namespace tfc {
namespace {

using internal::hf::AddedToken;
using internal::hf::DecoderStep;
using internal::hf::NormalizerStep;
using internal::hf::Piece;
using internal::hf::PrependScheme;
using internal::hf::PreTokenizerStep;

void replaceAll(std::string* text, std::string_view from, std::string_view to) {
  if (from.empty() || text->find(from) == std::string::npos) return;
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t found = text->find(from, pos);
    if (found == std::string::npos) break;
    out.append(*text, pos, found - pos);
    out.append(to);
    pos = found + from.size();
  }
  out.append(*text, pos, std::string::npos);
  *text = std::move(out);
}

bool isWordChar(uint32_t cp) {
  internal::CharClass cls = internal::classify(cp);
  return cls == internal::kLetter || cls == internal::kNumber || cp == '_';
}

// The code point of the last character of |text| (which ends a well-formed sequence), or
// kInvalidCodePoint.
uint32_t lastChar(std::string_view text, size_t* begin) {
  size_t pos = text.size();
  while (pos > 0) {
    --pos;
    if ((static_cast<unsigned char>(text[pos]) & 0xC0) != 0x80) break;
  }
  uint32_t cp = internal::kInvalidCodePoint;
  if (pos < text.size() && internal::decodeUtf8(text, pos, &cp) != text.size() - pos) {
    cp = internal::kInvalidCodePoint;
    pos = text.size() - 1;
  }
  *begin = pos;
  return cp;
}

// A piece's text cut into the matches of a delimiter and what lies between them.
struct Span {
  size_t begin, end;
  bool match;
};

// Splits |piece| by |spans| (which cover it, in order) as `tokenizers`'
// NormalizedString::split does with |behavior|; appends the pieces to |out|.
void splitBySpans(const Piece& piece, const std::vector<Span>& spans,
                  PreTokenizerStep::Behavior behavior, std::vector<Piece>* out) {
  using Behavior = PreTokenizerStep::Behavior;
  std::vector<Span> kept;
  bool previousMatch = false;
  switch (behavior) {
    case Behavior::kIsolated:
      kept = spans;
      break;
    case Behavior::kRemoved:
      for (const Span& span : spans) {
        if (!span.match) kept.push_back(span);
      }
      break;
    case Behavior::kContiguous:
      for (const Span& span : spans) {
        if (span.match == previousMatch && !kept.empty()) {
          kept.back().end = span.end;
        } else {
          kept.push_back(span);
        }
        previousMatch = span.match;
      }
      break;
    case Behavior::kMergedWithPrevious:
      for (const Span& span : spans) {
        if (span.match && !previousMatch && !kept.empty()) {
          kept.back().end = span.end;
        } else {
          kept.push_back(span);
        }
        previousMatch = span.match;
      }
      break;
    case Behavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->match && !previousMatch && !kept.empty()) {
          kept.back().begin = it->begin;
        } else {
          kept.push_back(*it);
        }
        previousMatch = it->match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  for (const Span& span : kept) {
    out->push_back(
        {piece.text.substr(span.begin, span.end - span.begin), piece.atStart && span.begin == 0});
  }
}

// The occurrences of |literal| in |piece| (non-overlapping, left to right).
std::vector<Span> literalSpans(const Piece& piece, const std::string& literal) {
  std::vector<Span> spans;
  size_t prev = 0;
  for (size_t found = piece.text.find(literal); found != std::string::npos;
       found = piece.text.find(literal, found + literal.size())) {
    if (found != prev) spans.push_back({prev, found, false});
    spans.push_back({found, found + literal.size(), true});
    prev = found + literal.size();
  }
  if (prev != piece.text.size()) spans.push_back({prev, piece.text.size(), false});
  return spans;
}

// Each punctuation character of |piece| a match of its own.
std::vector<Span> punctuationSpans(const Piece& piece) {
  std::vector<Span> spans;
  size_t prev = 0;
  for (size_t pos = 0; pos < piece.text.size();) {
    uint32_t cp = 0;
    size_t length = internal::decodeUtf8(piece.text, pos, &cp);
    if (length != 0 && internal::isPunctuation(cp)) {
      if (pos != prev) spans.push_back({prev, pos, false});
      spans.push_back({pos, pos + length, true});
      prev = pos + length;
    }
    pos += length == 0 ? 1 : length;
  }
  if (prev != piece.text.size()) spans.push_back({prev, piece.text.size(), false});
  return spans;
}

}  // namespace

template <typename OnText, typename OnToken>
void HfTokenizer::Impl::splitAdded(std::string_view text, bool normalized, OnText&& onText,
                                   OnToken&& onToken) const {
  size_t startOffset = 0;  // the end of the last match kept
  size_t pos = 0;          // where the search for the next match starts
  while (pos < text.size()) {
    // The leftmost match, the longest there (aho-corasick's LeftmostLongest).
    const AddedToken* match = nullptr;
    size_t matchStart = pos;
    for (; matchStart < text.size() && match == nullptr; ++matchStart) {
      const auto& candidates =
          addedByFirstByte[normalized][static_cast<unsigned char>(text[matchStart])];
      for (uint32_t index : candidates) {  // by decreasing length
        const AddedToken& token = addedTokens[index];
        if (text.compare(matchStart, token.content.size(), token.content) == 0) {
          match = &token;
          break;
        }
      }
      if (match != nullptr) break;
    }
    if (match == nullptr) break;
    size_t start = matchStart, stop = matchStart + match->content.size();
    pos = stop;
    if (start < startOffset) continue;  // inside what an rstrip took
    if (match->singleWord) {
      size_t begin = 0;
      bool startSpace = start == 0 || !isWordChar(lastChar(text.substr(0, start), &begin));
      uint32_t next = internal::kInvalidCodePoint;
      bool stopSpace =
          stop == text.size() || internal::decodeUtf8(text, stop, &next) == 0 || !isWordChar(next);
      if (!startSpace || !stopSpace) continue;
    }
    if (match->lstrip) {
      size_t newStart = start;
      while (newStart > startOffset) {
        size_t begin = 0;
        uint32_t cp = lastChar(text.substr(0, newStart), &begin);
        if (cp == internal::kInvalidCodePoint || !internal::isWhiteSpace(cp)) break;
        newStart = begin;
      }
      start = newStart;
    }
    if (match->rstrip) {
      uint32_t cp = 0;
      size_t length = 0;
      while (stop < text.size() && (length = internal::decodeUtf8(text, stop, &cp)) != 0 &&
             internal::isWhiteSpace(cp)) {
        stop += length;
      }
      pos = std::max(pos, stop);
    }
    if (startOffset < start) onText(startOffset, start);
    onToken(match->id);
    startOffset = stop;
  }
  if (startOffset < text.size()) onText(startOffset, text.size());
}

std::string HfTokenizer::Impl::normalize(std::string text) const {
  for (const NormalizerStep& step : normalizer) {
    switch (step.kind) {
      case NormalizerStep::kNfc:
        text = internal::toNfc(text);
        break;
      case NormalizerStep::kPrepend:
        if (!text.empty()) text.insert(0, step.content);
        break;
      case NormalizerStep::kReplace:
        replaceAll(&text, step.pattern, step.content);
        break;
    }
  }
  return text;
}

void HfTokenizer::Impl::preTokenize(std::vector<Piece>* pieces) const {
  static const std::array<uint32_t, 256> kByteToCp = internal::byteToCodePoint();
  std::vector<Piece> next;
  std::vector<size_t> ends;
  auto splitInto = [&](const Piece& piece, internal::SplitPattern pattern) {
    ends.clear();
    internal::splitByPattern(piece.text, pattern, &ends);
    size_t begin = 0;
    for (size_t end : ends) {
      next.push_back({piece.text.substr(begin, end - begin), piece.atStart && begin == 0});
      begin = end;
    }
  };
  for (const PreTokenizerStep& step : preTokenizer) {
    next.clear();
    for (Piece& piece : *pieces) {
      switch (step.kind) {
        case PreTokenizerStep::kSplit:
          splitInto(piece, step.pattern);
          break;
        case PreTokenizerStep::kSplitString:
          splitBySpans(piece, literalSpans(piece, step.literal), step.behavior, &next);
          break;
        case PreTokenizerStep::kPunctuation:
          splitBySpans(piece, punctuationSpans(piece), step.behavior, &next);
          break;
        case PreTokenizerStep::kDigits: {
          // Digits (\p{N}) apart from the rest: each one, or each run of them.
          size_t begin = 0;
          bool lastDigit = false;
          for (size_t pos = 0; pos < piece.text.size();) {
            uint32_t cp = 0;
            size_t length = internal::decodeUtf8(piece.text, pos, &cp);
            bool digit = length > 0 && internal::classify(cp) == internal::kNumber;
            if (length == 0) length = 1;
            if (pos > begin && (digit != lastDigit || (digit && step.individualDigits))) {
              next.push_back({piece.text.substr(begin, pos - begin), piece.atStart && begin == 0});
              begin = pos;
            }
            lastDigit = digit;
            pos += length;
          }
          next.push_back({piece.text.substr(begin), piece.atStart && begin == 0});
          break;
        }
        case PreTokenizerStep::kByteLevel: {
          if (step.addPrefixSpace && piece.text[0] != ' ') piece.text.insert(0, " ");
          size_t first = next.size();
          if (step.useRegex) {
            splitInto(piece, internal::SplitPattern::kGpt2);
          } else {
            next.push_back(std::move(piece));
          }
          // Each byte to its printable stand-in.
          for (size_t i = first; i < next.size(); ++i) {
            std::string mapped;
            mapped.reserve(next[i].text.size() * 2);
            for (unsigned char byte : next[i].text) internal::appendUtf8(kByteToCp[byte], &mapped);
            next[i].text = std::move(mapped);
          }
          break;
        }
        case PreTokenizerStep::kMetaspace: {
          replaceAll(&piece.text, " ", step.replacement);
          bool startsWithReplacement =
              piece.text.compare(0, step.replacement.size(), step.replacement) == 0;
          if (!startsWithReplacement &&
              (step.prependScheme == PrependScheme::kAlways ||
               (step.prependScheme == PrependScheme::kFirst && piece.atStart))) {
            piece.text.insert(0, step.replacement);
          }
          if (!step.split) {
            next.push_back(std::move(piece));
            break;
          }
          // Split before each replacement character (MergedWithNext).
          size_t begin = 0;
          while (begin < piece.text.size()) {
            size_t end = piece.text.find(step.replacement, begin + 1);
            if (end == std::string::npos) end = piece.text.size();
            next.push_back({piece.text.substr(begin, end - begin), piece.atStart && begin == 0});
            begin = end;
          }
          break;
        }
      }
    }
    next.erase(
        std::remove_if(next.begin(), next.end(), [](const Piece& p) { return p.text.empty(); }),
        next.end());
    pieces->swap(next);
  }
}

void HfTokenizer::Impl::tokenizeWord(std::string_view word, std::vector<int32_t>* out) const {
  if (ignoreMerges) {
    int32_t id = modelId(std::string(word));
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  wordCache.tokens(word, out,
                   [this](std::string_view w, std::vector<int32_t>* o) { mergeWord(w, o); });
}

// The word's characters as tokens (byte fallback or the unknown token for those that are
// not in the vocabulary), merged: BPE::merge_word of `tokenizers`.
void HfTokenizer::Impl::mergeWord(std::string_view word, std::vector<int32_t>* out) const {
  // A symbol that is part of no merge keeps its neighbours apart for good, so the runs
  // between such symbols are merged alone: the same result, with the working memory of a
  // run rather than of the whole word (a SentencePiece-style text between added tokens is
  // one word; its newlines are such symbols).
  std::vector<int32_t> run;
  auto add = [&](int32_t symbol) {
    if (static_cast<size_t>(symbol) < mergeable.size() && mergeable[symbol]) {
      run.push_back(symbol);
      return;
    }
    internal::bpeMerge(std::move(run), merges, out);
    run.clear();
    out->push_back(symbol);
  };
  int32_t pendingUnk = -1;  // `tokenizers` adds an unknown token once its run ends
  std::string character;
  for (size_t pos = 0; pos < word.size();) {
    uint32_t cp = 0;
    size_t length = internal::decodeUtf8(word, pos, &cp);
    if (length == 0) length = 1;  // an invalid byte: its own character
    character.assign(word.substr(pos, length));
    pos += length;
    int32_t id = modelId(character);
    if (id >= 0) {
      if (pendingUnk >= 0) add(pendingUnk);
      pendingUnk = -1;
      add(id);
      continue;
    }
    if (byteFallback && std::all_of(character.begin(), character.end(), [&](char c) {
          return byteFallbackIds[static_cast<unsigned char>(c)] >= 0;
        })) {
      // As `tokenizers` does, a pending unknown token waits until a vocabulary character.
      for (char c : character) add(byteFallbackIds[static_cast<unsigned char>(c)]);
      continue;
    }
    if (unkId) {
      if (pendingUnk >= 0 && !fuseUnk) add(pendingUnk);
      pendingUnk = *unkId;
    }
    // Without an unknown token the character is dropped, as in `tokenizers`.
  }
  if (pendingUnk >= 0) add(pendingUnk);
  internal::bpeMerge(std::move(run), merges, out);
}

std::string HfTokenizer::Impl::decodeTokens(const int32_t* ids, size_t count,
                                            bool wholeText) const {
  static const std::array<int16_t, 512> kCpToByte = internal::codePointToByte();
  std::vector<std::string> tokens;
  tokens.reserve(count);
  for (size_t i = 0; i < count; ++i) tokens.push_back(idToToken[ids[i]]);
  for (const DecoderStep& step : decoder) {
    switch (step.kind) {
      case DecoderStep::kByteLevel: {
        // Each token's stand-ins to their bytes; a token with a character that stands for
        // no byte (an added token) is taken as it is. One string, as in `tokenizers`.
        std::string bytes;
        for (const std::string& token : tokens) {
          size_t mark = bytes.size();
          bool allBytes = true;
          for (size_t pos = 0; pos < token.size();) {
            uint32_t cp = 0;
            size_t length = internal::decodeUtf8(token, pos, &cp);
            if (length == 0 || cp >= kCpToByte.size() || kCpToByte[cp] < 0) {
              allBytes = false;
              break;
            }
            bytes += static_cast<char>(kCpToByte[cp]);
            pos += length;
          }
          if (!allBytes) {
            bytes.resize(mark);
            bytes += token;
          }
        }
        tokens.assign(1, wholeText ? internal::replaceInvalidUtf8(bytes) : std::move(bytes));
        break;
      }
      case DecoderStep::kReplace:
        for (std::string& token : tokens) replaceAll(&token, step.pattern, step.content);
        break;
      case DecoderStep::kByteFallback: {
        std::vector<std::string> result;
        std::string run;  // bytes of consecutive <0xAB> tokens
        auto flush = [&] {
          if (run.empty()) return;
          if (!wholeText || !internal::firstInvalidUtf8(run)) {
            result.push_back(run);
          } else {
            for (size_t i = 0; i < run.size(); ++i) result.push_back("\xEF\xBF\xBD");
          }
          run.clear();
        };
        for (std::string& token : tokens) {
          int byte = -1;
          if (token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>') {
            auto hex = [](char c) {
              if (c >= '0' && c <= '9') return c - '0';
              if (c >= 'a' && c <= 'f') return c - 'a' + 10;
              if (c >= 'A' && c <= 'F') return c - 'A' + 10;
              return -1;
            };
            int high = hex(token[3]), low = hex(token[4]);
            if (high >= 0 && low >= 0) byte = high * 16 + low;
          }
          if (byte >= 0) {
            run += static_cast<char>(byte);
          } else {
            flush();
            result.push_back(std::move(token));
          }
        }
        flush();
        tokens = std::move(result);
        break;
      }
      case DecoderStep::kFuse: {
        std::string all;
        for (const std::string& token : tokens) all += token;
        tokens.assign(1, std::move(all));
        break;
      }
      case DecoderStep::kStrip: {
        // Cuts at the start and end of a text only: a streamed token continues one.
        if (!wholeText) break;
        std::string stripChar;
        internal::appendUtf8(step.stripChar, &stripChar);
        for (std::string& token : tokens) {
          for (size_t i = 0; i < step.start && token.compare(0, stripChar.size(), stripChar) == 0;
               ++i) {
            token.erase(0, stripChar.size());
          }
          for (size_t i = 0;
               i < step.stop && token.size() >= stripChar.size() &&
               token.compare(token.size() - stripChar.size(), stripChar.size(), stripChar) == 0;
               ++i) {
            token.resize(token.size() - stripChar.size());
          }
        }
        break;
      }
      case DecoderStep::kMetaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          bool drop = wholeText && i == 0 && step.prependScheme != PrependScheme::kNever;
          replaceAll(&tokens[i], step.replacement, drop ? "" : " ");
        }
        break;
    }
  }
  std::string out;
  for (const std::string& token : tokens) out += token;
  return out;
}

HfTokenizer::HfTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HfTokenizer::HfTokenizer(HfTokenizer&&) noexcept = default;
HfTokenizer& HfTokenizer::operator=(HfTokenizer&&) noexcept = default;
HfTokenizer::~HfTokenizer() = default;

std::string_view HfTokenizer::kind() const {
  return impl_->byteLevel ? "hf-bpe-bytelevel" : "hf-bpe-sentencepiece";
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  std::vector<Piece> pieces;
  auto onToken = [&](int32_t id) { ids.push_back(id); };
  impl_->splitAdded(
      text, /*normalized=*/false,
      [&](size_t begin, size_t end) {
        std::string normalized = impl_->normalize(std::string(text.substr(begin, end - begin)));
        impl_->splitAdded(
            normalized, /*normalized=*/true,
            [&](size_t b, size_t e) {
              std::string_view segment = std::string_view(normalized).substr(b, e - b);
              if (impl_->preTokenizer.empty()) {  // one word (LLaMA 2): no copy
                impl_->tokenizeWord(segment, &ids);
                return;
              }
              pieces.assign(1, Piece{std::string(segment), begin == 0 && b == 0});
              impl_->preTokenize(&pieces);
              for (const Piece& piece : pieces) impl_->tokenizeWord(piece.text, &ids);
            },
            onToken);
      },
      onToken);
  return ids;
}

StatusOr<std::string> HfTokenizer::decode(const int32_t* ids, size_t count) const {
  const int32_t size = vocabSize();
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= size || !impl_->hasToken[ids[i]]) {
      return Status::error(
          TFC_INVALID_ARGUMENT, "token id %d (at position %zu) is %s", ids[i], i,
          ids[i] < 0 || ids[i] >= size
              ? ("outside the vocabulary [0, " + std::to_string(size) + ")").c_str()
              : "a hole in the vocabulary (no token has it)");
    }
  }
  return impl_->decodeTokens(ids, count, /*wholeText=*/false);
}

StatusOr<std::string> HfTokenizer::decodeText(const std::vector<int32_t>& ids) const {
  TFC_ASSIGN_OR_RETURN(std::string checked, decode(ids.data(), ids.size()));  // checks the ids
  return internal::replaceInvalidUtf8(
      impl_->decodeTokens(ids.data(), ids.size(), /*wholeText=*/true));
}

int32_t HfTokenizer::vocabSize() const { return static_cast<int32_t>(impl_->idToToken.size()); }
std::optional<int32_t> HfTokenizer::eosId() const { return impl_->eos; }
std::optional<int32_t> HfTokenizer::bosId() const { return impl_->bos; }

std::optional<int32_t> HfTokenizer::tokenId(std::string_view token) const {
  auto it = impl_->vocab.find(std::string(token));
  return it == impl_->vocab.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

// A "\n" between two ASCII letters or digits ends a piece under every supported splitting
// pattern (GPT-2's: the letter or digit run stops at it and "\n" alone is \s+; LLaMA 3's
// and Qwen2's: \s*[\r\n]+) and the next piece starts after it whatever came before, NFC
// composes nothing across it, and no added token spans it (none contains "\n" and none
// strips the space on its left). Tokenizers that put text before each segment (a Prepend
// normalizer, Metaspace or ByteLevel adding a prefix space) or that do not split into
// pieces (the whole text is one BPE word) are never split.
size_t HfTokenizer::nextSplit(std::string_view text, size_t from) const {
  if (!impl_->splittable) return text.size();
  auto alnum = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  };
  for (size_t p = std::max<size_t>(from, 2); p < text.size(); ++p) {
    if (text[p - 1] == '\n' && alnum(text[p - 2]) && alnum(text[p])) return p;
  }
  return text.size();
}

}  // namespace tfc
