#include "tokenizers/split_patterns.hpp"

#include <cstdint>

#include "base/unicode.hpp"

namespace tfc::internal {
namespace {

constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// One character of the text being split: a well-formed UTF-8 sequence, or a single byte
// that does not start one (kInvalidCodePoint, class kOther).
struct Char {
  uint32_t offset;  // byte offset in the text
  uint32_t cp;
  CharClass cls;
};

void decodeChars(std::string_view text, std::vector<Char>* chars) {
  chars->clear();
  for (size_t pos = 0; pos < text.size();) {
    uint32_t cp = 0;
    size_t length = decodeUtf8(text, pos, &cp);
    if (length == 0) {
      chars->push_back({static_cast<uint32_t>(pos), kInvalidCodePoint, kOther});
      pos += 1;
    } else {
      chars->push_back({static_cast<uint32_t>(pos), cp, classify(cp)});
      pos += length;
    }
  }
}

bool isNewline(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// The end of the match of 's|'t|'re|'ve|'m|'ll|'d at |i|, or |i| when none;
// |ignoreCase| for (?i:...).
size_t matchContraction(const std::vector<Char>& c, size_t i, bool ignoreCase) {
  const size_t n = c.size();
  if (c[i].cp != '\'') return i;
  auto at = [&](size_t k) -> uint32_t {
    if (k >= n) return kInvalidCodePoint;
    uint32_t cp = c[k].cp;
    if (ignoreCase && cp >= 'A' && cp <= 'Z') cp += 'a' - 'A';
    // Case folding maps U+017F LATIN SMALL LETTER LONG S to 's' (Oniguruma folds it).
    if (ignoreCase && cp == 0x17F) cp = 's';
    return cp;
  };
  uint32_t a = at(i + 1), b = at(i + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return i;
}

// \s+(?!\S)|\s+ at |i| (a space): the run, less its last space when a non-space follows
// and the run has more than one.
size_t matchSpaces(const std::vector<Char>& c, size_t i) {
  const size_t n = c.size();
  size_t k = i;
  while (k < n && c[k].cls == kSpace) ++k;
  return (k < n && k - i >= 2) ? k - 1 : k;
}

size_t matchGpt2(const std::vector<Char>& c, size_t i) {
  const size_t n = c.size();
  size_t end = matchContraction(c, i, /*ignoreCase=*/false);
  if (end != i) return end;
  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': an optional U+0020, then a run of one class.
  size_t j = (c[i].cp == ' ' && i + 1 < n) ? i + 1 : i;
  CharClass cls = c[j].cls;
  if (cls != kSpace) {
    end = j + 1;
    while (end < n && c[end].cls == cls) ++end;
    return end;
  }
  return matchSpaces(c, i);
}

size_t matchLlama3(const std::vector<Char>& c, size_t i, size_t maxDigits) {
  const size_t n = c.size();
  size_t end = matchContraction(c, i, /*ignoreCase=*/true);
  if (end != i) return end;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  size_t j = i;
  if (c[i].cls != kLetter && c[i].cls != kNumber && !isNewline(c[i].cp) && i + 1 < n &&
      c[i + 1].cls == kLetter) {
    j = i + 1;
  }
  if (c[j].cls == kLetter) {
    end = j + 1;
    while (end < n && c[end].cls == kLetter) ++end;
    return end;
  }
  // \p{N}{1,maxDigits}
  if (c[i].cls == kNumber) {
    end = i + 1;
    while (end < n && end - i < maxDigits && c[end].cls == kNumber) ++end;
    return end;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  j = (c[i].cp == ' ' && i + 1 < n && c[i + 1].cls == kOther) ? i + 1 : i;
  if (c[j].cls == kOther) {
    end = j + 1;
    while (end < n && c[end].cls == kOther) ++end;
    while (end < n && isNewline(c[end].cp)) ++end;
    return end;
  }
  // \s*[\r\n]+: the space run up to and including its last newline.
  size_t k = i;
  size_t afterNewline = i;
  while (k < n && c[k].cls == kSpace) {
    if (isNewline(c[k].cp)) afterNewline = k + 1;
    ++k;
  }
  if (afterNewline != i) return afterNewline;
  return matchSpaces(c, i);
}

}  // namespace

std::optional<SplitPattern> splitPatternOf(std::string_view regex) {
  for (SplitPattern pattern : {SplitPattern::kGpt2, SplitPattern::kLlama3, SplitPattern::kQwen2}) {
    if (regex == splitPatternRegex(pattern)) return pattern;
  }
  return std::nullopt;
}

std::string_view splitPatternRegex(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::kGpt2:
      return kGpt2Regex;
    case SplitPattern::kLlama3:
      return kLlama3Regex;
    case SplitPattern::kQwen2:
      return kQwen2Regex;
  }
  return {};
}

void splitByPattern(std::string_view text, SplitPattern pattern, std::vector<size_t>* ends) {
  // Per thread, so that splitting many short texts does not allocate each time.
  thread_local std::vector<Char> chars;
  decodeChars(text, &chars);
  const size_t n = chars.size();
  for (size_t i = 0; i < n;) {
    size_t end = pattern == SplitPattern::kGpt2     ? matchGpt2(chars, i)
                 : pattern == SplitPattern::kLlama3 ? matchLlama3(chars, i, 3)
                                                    : matchLlama3(chars, i, 1);
    ends->push_back(end < n ? chars[end].offset : text.size());
    i = end;
  }
}

}  // namespace tfc::internal
