#include "base/unicode.hpp"

#include <algorithm>
#include <iterator>
#include <vector>

namespace tfc::internal {
namespace {

struct UnicodeRange {
  uint32_t first;
  uint32_t last;
  uint8_t kind;  // 1: letter (L*), 2: number (N*)
};

#include "base/unicode_tables.inc"

struct CombiningClassRange {
  uint32_t first;
  uint32_t last;
  uint8_t cls;
};
struct Decomposition {
  uint32_t cp;
  uint32_t offset;  // into kDecompositionCodePoints
  uint32_t length;
};
struct Composition {
  uint32_t first;
  uint32_t second;
  uint32_t composite;
};
struct CodePointRange {
  uint32_t first;
  uint32_t last;
};

#include "base/unicode_nfc_tables.inc"
#include "base/unicode_punctuation_tables.inc"

// Hangul syllables, decomposed and composed by arithmetic (Unicode 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount;
constexpr uint32_t kSCount = kLCount * kNCount;

void decompose(uint32_t cp, std::vector<uint32_t>* out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    uint32_t s = cp - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out->push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition* begin = std::begin(kDecompositions);
  const Decomposition* end = std::end(kDecompositions);
  const Decomposition* it = std::lower_bound(
      begin, end, cp, [](const Decomposition& d, uint32_t value) { return d.cp < value; });
  if (it == end || it->cp != cp) {
    out->push_back(cp);
    return;
  }
  out->insert(out->end(), kDecompositionCodePoints + it->offset,
              kDecompositionCodePoints + it->offset + it->length);
}

// The primary composite of |first| and |second|, or 0.
uint32_t compose(uint32_t first, uint32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase &&
      second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
      second > kTBase && second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  const Composition* begin = std::begin(kCompositions);
  const Composition* end = std::end(kCompositions);
  const Composition* it =
      std::lower_bound(begin, end, std::make_pair(first, second),
                       [](const Composition& c, const std::pair<uint32_t, uint32_t>& value) {
                         return std::make_pair(c.first, c.second) < value;
                       });
  return it != end && it->first == first && it->second == second ? it->composite : 0;
}

// The canonical composition algorithm (Unicode 3.11) over |cps| (decomposed and in
// canonical order), in place. kInvalidCodePoint entries are starters that compose with
// nothing.
void composeInPlace(std::vector<uint32_t>* cps) {
  std::vector<uint32_t>& c = *cps;
  size_t starter = SIZE_MAX;  // index in the output of the last starter
  size_t out = 0;
  int lastClass = -1;  // class of the last character kept after the starter
  for (size_t i = 0; i < c.size(); ++i) {
    uint32_t cp = c[i];
    int cls = cp == kInvalidCodePoint ? 0 : combiningClass(cp);
    if (starter != SIZE_MAX && c[starter] != kInvalidCodePoint && cp != kInvalidCodePoint) {
      // Not blocked: no character between the starter and this one has a class >= its own
      // (or the one just before it is the starter itself).
      bool blocked = lastClass != -1 && (lastClass == 0 || lastClass >= cls);
      if (!blocked) {
        uint32_t composite = compose(c[starter], cp);
        if (composite != 0) {
          c[starter] = composite;
          continue;
        }
      }
    }
    if (cls == 0) {
      starter = out;
      lastClass = -1;
    } else {
      lastClass = cls;
    }
    c[out++] = cp;
  }
  c.resize(out);
}

// NFC of |text| by the book: full canonical decomposition, canonical ordering, composition;
// appended to |out|.
void appendNfc(std::string_view text, std::string* out) {
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  std::vector<unsigned char> invalidBytes;  // the bytes behind kInvalidCodePoint, in order
  for (size_t pos = 0; pos < text.size();) {
    uint32_t cp = 0;
    size_t length = decodeUtf8(text, pos, &cp);
    if (length == 0) {
      cps.push_back(kInvalidCodePoint);
      invalidBytes.push_back(static_cast<unsigned char>(text[pos]));
      pos += 1;
      continue;
    }
    decompose(cp, &cps);
    pos += length;
  }
  // Canonical ordering: a stable sort of each run of non-starters by combining class.
  for (size_t i = 0; i < cps.size();) {
    auto isMark = [](uint32_t cp) { return cp != kInvalidCodePoint && combiningClass(cp) != 0; };
    if (!isMark(cps[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && isMark(cps[j])) ++j;
    std::stable_sort(cps.begin() + i, cps.begin() + j,
                     [](uint32_t a, uint32_t b) { return combiningClass(a) < combiningClass(b); });
    i = j;
  }
  composeInPlace(&cps);
  size_t nextInvalid = 0;
  for (uint32_t cp : cps) {
    if (cp == kInvalidCodePoint) {
      *out += static_cast<char>(invalidBytes[nextInvalid++]);
    } else {
      appendUtf8(cp, out);
    }
  }
}

// Whether NFC may change the text at |cp| or compose it with what precedes it (see
// kNfcUnsafe). Before any other character, NFC of a text is NFC of the parts.
bool nfcUnsafe(uint32_t cp) {
  if (cp < 0x300) return false;
  const CodePointRange* begin = std::begin(kNfcUnsafe);
  const CodePointRange* end = std::end(kNfcUnsafe);
  const CodePointRange* it = std::lower_bound(
      begin, end, cp, [](const CodePointRange& r, uint32_t value) { return r.last < value; });
  return it != end && it->first <= cp;
}

}  // namespace

bool isWhiteSpace(uint32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

CharClass classify(uint32_t cp) {
  if (cp < 0x80) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return kLetter;
    if (cp >= '0' && cp <= '9') return kNumber;
    return isWhiteSpace(cp) ? kSpace : kOther;
  }
  if (cp == kInvalidCodePoint) return kOther;
  if (isWhiteSpace(cp)) return kSpace;
  const UnicodeRange* begin = std::begin(kUnicodeRanges);
  const UnicodeRange* end = std::end(kUnicodeRanges);
  // The first range whose last code point is >= cp.
  const UnicodeRange* it = std::lower_bound(
      begin, end, cp, [](const UnicodeRange& range, uint32_t value) { return range.last < value; });
  if (it != end && it->first <= cp) return static_cast<CharClass>(it->kind);
  return kOther;
}

size_t decodeUtf8(std::string_view text, size_t pos, uint32_t* cp) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(pos);
  if (lead < 0x80) {
    *cp = lead;
    return 1;
  }
  size_t length;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  uint32_t value;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    value = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    value = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    value = lead & 0x07;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (text.size() - pos < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    unsigned char c = byte(pos + i);
    if (i == 1 ? (c < low || c > high) : (c < 0x80 || c > 0xBF)) return 0;
    value = (value << 6) | (c & 0x3F);
  }
  *cp = value;
  return length;
}

void appendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::optional<size_t> firstInvalidUtf8(std::string_view bytes) {
  for (size_t pos = 0; pos < bytes.size();) {
    uint32_t cp = 0;
    size_t length = decodeUtf8(bytes, pos, &cp);
    if (length == 0) return pos;
    pos += length;
  }
  return std::nullopt;
}

std::string replaceInvalidUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t pos = 0; pos < bytes.size();) {
    uint32_t cp = 0;
    size_t length = decodeUtf8(bytes, pos, &cp);
    if (length > 0) {
      out.append(bytes.substr(pos, length));
      pos += length;
      continue;
    }
    // The maximal subpart: the lead byte and the continuation bytes that could still have
    // completed a well-formed sequence (none when the lead byte cannot start one).
    unsigned char lead = static_cast<unsigned char>(bytes[pos]);
    size_t neededLength = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF)
      neededLength = 2;
    else if (lead >= 0xE0 && lead <= 0xEF)
      neededLength = 3;
    else if (lead >= 0xF0 && lead <= 0xF4)
      neededLength = 4;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
    size_t consumed = 1;
    while (consumed < neededLength && pos + consumed < bytes.size()) {
      unsigned char c = static_cast<unsigned char>(bytes[pos + consumed]);
      bool ok = consumed == 1 ? (c >= low && c <= high) : (c >= 0x80 && c <= 0xBF);
      if (!ok) break;
      ++consumed;
    }
    out += "\xEF\xBF\xBD";
    pos += consumed;
  }
  return out;
}

std::array<uint32_t, 256> byteToCodePoint() {
  std::array<uint32_t, 256> table{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[b] = printable ? b : next++;
  }
  return table;
}

std::array<int16_t, 512> codePointToByte() {
  std::array<int16_t, 512> table;
  table.fill(-1);
  const std::array<uint32_t, 256> forward = byteToCodePoint();
  for (int b = 0; b < 256; ++b) table[forward[b]] = static_cast<int16_t>(b);
  return table;
}

bool isPunctuation(uint32_t cp) {
  if (cp < 0x80) {
    return (cp >= '!' && cp <= '/') || (cp >= ':' && cp <= '@') || (cp >= '[' && cp <= '`') ||
           (cp >= '{' && cp <= '~');
  }
  const CodePointRange* begin = std::begin(kPunctuation);
  const CodePointRange* end = std::end(kPunctuation);
  const CodePointRange* it = std::lower_bound(
      begin, end, cp, [](const CodePointRange& r, uint32_t value) { return r.last < value; });
  return it != end && it->first <= cp;
}

uint8_t combiningClass(uint32_t cp) {
  if (cp < 0x300) return 0;
  const CombiningClassRange* begin = std::begin(kCombiningClasses);
  const CombiningClassRange* end = std::end(kCombiningClasses);
  const CombiningClassRange* it = std::lower_bound(
      begin, end, cp, [](const CombiningClassRange& r, uint32_t value) { return r.last < value; });
  return it != end && it->first <= cp ? it->cls : 0;
}

std::string toNfc(std::string_view text) {
  // The text in chunks that each start before a character NFC keeps as it is and leaves
  // as a boundary: a chunk without other characters is copied, the others normalized.
  std::string out;
  out.reserve(text.size());
  size_t chunk = 0;
  bool changes = false;  // the chunk has a character that NFC may change
  for (size_t pos = 0; pos < text.size();) {
    uint32_t cp = 0;
    size_t length = decodeUtf8(text, pos, &cp);
    // An ill-formed byte is kept as it is and composes with nothing: a boundary.
    bool unsafe = length != 0 && nfcUnsafe(cp);
    if (!unsafe && pos > chunk) {
      if (changes) {
        appendNfc(text.substr(chunk, pos - chunk), &out);
      } else {
        out.append(text, chunk, pos - chunk);
      }
      chunk = pos;
      changes = false;
    }
    changes = changes || unsafe;
    pos += length == 0 ? 1 : length;
  }
  if (changes) {
    appendNfc(text.substr(chunk), &out);
  } else {
    out.append(text, chunk, std::string_view::npos);
  }
  return out;
}

}  // namespace tfc::internal
