#include "tfc/runtime/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <utility>

#include "file_util.hpp"
#include "json_reader.hpp"

namespace tfc {
namespace {

// ---------------------------------------------------------------------------------------
// Unicode classification for the pre-tokenizer.

struct UnicodeRange {
  uint32_t first;
  uint32_t last;
  uint8_t kind;  // 1: letter (L*), 2: number (N*)
};

#include "unicode_tables.inc"

enum CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };

// Unicode's White_Space property, which is what \s means in the `regex` module.
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
  if (isWhiteSpace(cp)) return kSpace;
  const UnicodeRange* begin = std::begin(kUnicodeRanges);
  const UnicodeRange* end = std::end(kUnicodeRanges);
  // The first range whose last code point is >= cp.
  const UnicodeRange* it = std::lower_bound(
      begin, end, cp, [](const UnicodeRange& range, uint32_t value) { return range.last < value; });
  if (it != end && it->first <= cp) return static_cast<CharClass>(it->kind);
  return kOther;
}

// Decodes the well-formed UTF-8 sequence at |text[pos]|: returns its length and sets
// |*cp|, or returns 0 when the bytes there are not a well-formed sequence.
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

// One character of the text being pre-tokenized: a well-formed UTF-8 sequence, or a single
// byte that does not start one (classified kOther).
struct Char {
  uint32_t offset;  // byte offset in the segment
  uint32_t cp;      // the code point; 0xFFFFFFFF for an invalid byte
  CharClass cls;
};

// Calls |onPiece(begin, end)| (byte offsets) for each match of GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// over |text|, in order; the pieces cover the text.
template <typename OnPiece>
void preTokenize(std::string_view text, std::vector<Char>* chars, OnPiece&& onPiece) {
  chars->clear();
  for (size_t pos = 0; pos < text.size();) {
    uint32_t cp = 0;
    size_t length = decodeUtf8(text, pos, &cp);
    if (length == 0) {
      chars->push_back({static_cast<uint32_t>(pos), 0xFFFFFFFFu, kOther});
      pos += 1;
    } else {
      chars->push_back({static_cast<uint32_t>(pos), cp, classify(cp)});
      pos += length;
    }
  }
  const std::vector<Char>& c = *chars;
  const size_t n = c.size();
  auto offsetOf = [&](size_t i) { return i < n ? size_t{c[i].offset} : text.size(); };
  auto cpAt = [&](size_t i) { return i < n ? c[i].cp : 0xFFFFFFFFu; };
  size_t i = 0;
  while (i < n) {
    size_t end = i;
    // 's|'t|'re|'ve|'m|'ll|'d
    if (c[i].cp == '\'') {
      uint32_t a = cpAt(i + 1), b = cpAt(i + 2);
      if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        end = i + 2;
      } else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
        end = i + 3;
      }
    }
    // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': an optional U+0020, then a run of one class.
    if (end == i) {
      size_t j = (c[i].cp == ' ' && i + 1 < n) ? i + 1 : i;
      CharClass cls = c[j].cls;
      if (cls != kSpace) {
        end = j + 1;
        while (end < n && c[end].cls == cls) ++end;
      }
    }
    // '\s+(?!\S)', then '\s+'.
    if (end == i) {
      size_t k = i;
      while (k < n && c[k].cls == kSpace) ++k;
      // Followed by a non-space: give the last space back to the next piece, unless it is
      // the run's only one.
      end = (k < n && k - i >= 2) ? k - 1 : k;
    }
    onPiece(offsetOf(i), offsetOf(end));
    i = end;
  }
}

// bytes_to_unicode() of GPT-2: printable Latin-1 bytes stand for themselves, the others
// are mapped to U+0100.. in byte order.
std::array<uint32_t, 256> byteToCodePoint() {
  std::array<uint32_t, 256> table{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[b] = printable ? b : next++;
  }
  return table;
}

// 1-based line number of byte |offset| in |text|.
size_t lineOf(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

uint64_t pairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

struct Gpt2Tokenizer::Impl {
  struct Merge {
    int32_t rank;
    int32_t merged;  // the id of the merged token
  };

  std::vector<std::string> tokenBytes;  // id -> the token's raw bytes
  std::array<int32_t, 256> byteIds{};   // byte -> the id of its single-byte token
  std::unordered_map<uint64_t, Merge> merges;
  std::optional<int32_t> eos;

  static constexpr size_t kMaxCachedWordBytes = 128;
  static constexpr size_t kMaxCacheEntries = 1 << 16;
  mutable std::mutex cacheMutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

  void encodeOrdinary(std::string_view text, std::vector<int32_t>* out) const;
  void encodeWord(std::string_view word, std::vector<int32_t>* out) const;
  void bpe(std::string_view word, std::vector<int32_t>* out) const;
};

void Gpt2Tokenizer::Impl::encodeOrdinary(std::string_view text, std::vector<int32_t>* out) const {
  std::vector<Char> chars;
  preTokenize(text, &chars, [&](size_t begin, size_t end) {
    encodeWord(text.substr(begin, end - begin), out);
  });
}

void Gpt2Tokenizer::Impl::encodeWord(std::string_view word, std::vector<int32_t>* out) const {
  if (word.size() == 1) {
    out->push_back(byteIds[static_cast<unsigned char>(word[0])]);
    return;
  }
  bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cacheMutex);
    auto it = cache.find(std::string(word));
    if (it != cache.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t start = out->size();
  bpe(word, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cacheMutex);
    if (cache.size() >= kMaxCacheEntries) cache.clear();
    cache.emplace(std::string(word), std::vector<int32_t>(out->begin() + start, out->end()));
  }
}

// Byte-pair merging as in Hugging Face's GPT2Tokenizer.bpe(): repeatedly take the pair of
// adjacent symbols with the lowest merge rank and merge all its occurrences, left to right
// without overlaps. A heap of candidate pairs makes this O(n log n): all of the lowest
// rank's entries are taken out before any merge, so that pairs formed by this round's
// merges wait for the next round even when their rank is lower (as in Hugging Face).
void Gpt2Tokenizer::Impl::bpe(std::string_view word, std::vector<int32_t>* out) const {
  const int32_t n = static_cast<int32_t>(word.size());
  std::vector<int32_t> ids(n), next(n), prev(n);
  for (int32_t i = 0; i < n; ++i) {
    ids[i] = byteIds[static_cast<unsigned char>(word[i])];
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int32_t left;  // symbol index
    int32_t leftId;
    int32_t rightId;
    int32_t merged;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : left > other.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto consider = [&](int32_t left) {
    if (left < 0 || next[left] < 0) return;
    int32_t right = next[left];
    auto it = merges.find(pairKey(ids[left], ids[right]));
    if (it != merges.end()) {
      heap.push({it->second.rank, left, ids[left], ids[right], it->second.merged});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);

  std::vector<Candidate> round;
  while (!heap.empty()) {
    int32_t rank = heap.top().rank;
    round.clear();
    while (!heap.empty() && heap.top().rank == rank) {  // in order of position
      round.push_back(heap.top());
      heap.pop();
    }
    for (const Candidate& candidate : round) {
      int32_t left = candidate.left;
      int32_t right = next[left];
      // Stale when either symbol has been merged since the candidate was pushed (a merged
      // symbol gets a new id; an absorbed one gets -1).
      if (ids[left] != candidate.leftId || right < 0 || ids[right] != candidate.rightId) continue;
      ids[left] = candidate.merged;
      ids[right] = -1;
      next[left] = next[right];
      if (next[right] >= 0) prev[next[right]] = left;
    }
    for (const Candidate& candidate : round) {
      int32_t left = candidate.left;
      if (ids[left] != candidate.merged) continue;
      if (prev[left] >= 0) consider(prev[left]);
      consider(left);
    }
  }
  for (int32_t i = 0; i >= 0; i = next[i]) out->push_back(ids[i]);
}

Gpt2Tokenizer::Gpt2Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gpt2Tokenizer::Gpt2Tokenizer(Gpt2Tokenizer&&) noexcept = default;
Gpt2Tokenizer& Gpt2Tokenizer::operator=(Gpt2Tokenizer&&) noexcept = default;
Gpt2Tokenizer::~Gpt2Tokenizer() = default;

StatusOr<Gpt2Tokenizer> Gpt2Tokenizer::load(const std::string& dir) {
  std::string vocabPath = dir + "/vocab.json";
  std::string mergesPath = dir + "/merges.txt";
  TFC_ASSIGN_OR_RETURN(internal::FileContents vocab,
                       internal::readFile(vocabPath, internal::FileMapping::kReadOnly));
  TFC_ASSIGN_OR_RETURN(internal::FileContents merges,
                       internal::readFile(mergesPath, internal::FileMapping::kReadOnly));
  return fromContents(std::string_view(reinterpret_cast<const char*>(vocab.data), vocab.size),
                      std::string_view(reinterpret_cast<const char*>(merges.data), merges.size),
                      vocabPath, mergesPath);
}

StatusOr<Gpt2Tokenizer> Gpt2Tokenizer::fromContents(std::string_view vocabJson,
                                                    std::string_view mergesText,
                                                    const std::string& vocabName,
                                                    const std::string& mergesName) {
  auto impl = std::make_unique<Impl>();

  // vocab.json: {"token": id, ...}.
  struct Entry {
    std::string token;
    int64_t id;
    size_t offset;
  };
  std::vector<Entry> entries;
  internal::JsonReader reader(vocabJson);
  bool parsed = reader.readObject([&](std::string key) {
    size_t offset = reader.offset();
    int64_t id = 0;
    if (!reader.readInt64(&id)) return false;
    entries.push_back({std::move(key), id, offset});
    return true;
  });
  if (parsed && !reader.atEnd()) parsed = reader.fail("unexpected data after the top-level object");
  if (!parsed) {
    return Status::error(TFC_DATA_LOSS, "%s:%zu: invalid vocabulary JSON: %s", vocabName.c_str(),
                         lineOf(vocabJson, reader.offset()), reader.error().c_str());
  }
  if (entries.size() > static_cast<size_t>(INT32_MAX)) {
    return Status::error(TFC_DATA_LOSS, "%s: too many entries", vocabName.c_str());
  }
  const int64_t size = static_cast<int64_t>(entries.size());
  std::unordered_map<std::string, int32_t> encoder;
  encoder.reserve(entries.size());
  std::vector<bool> used(entries.size(), false);
  for (const Entry& entry : entries) {
    auto line = [&] { return lineOf(vocabJson, entry.offset); };  // only for errors
    if (entry.id < 0 || entry.id >= size) {
      return Status::error(TFC_DATA_LOSS,
                           "%s:%zu: token %s has id %lld, but ids must be 0..%lld (the "
                           "vocabulary has %lld entries)",
                           vocabName.c_str(), line(), internal::quoteForMessage(entry.token).c_str(),
                           static_cast<long long>(entry.id), static_cast<long long>(size - 1),
                           static_cast<long long>(size));
    }
    if (used[entry.id]) {
      return Status::error(TFC_DATA_LOSS, "%s:%zu: id %lld of token %s is used twice",
                           vocabName.c_str(), line(), static_cast<long long>(entry.id),
                           internal::quoteForMessage(entry.token).c_str());
    }
    used[entry.id] = true;
    if (!encoder.emplace(entry.token, static_cast<int32_t>(entry.id)).second) {
      return Status::error(TFC_DATA_LOSS, "%s:%zu: token %s appears twice", vocabName.c_str(),
                           line(), internal::quoteForMessage(entry.token).c_str());
    }
  }

  // The raw bytes of every token: each character is one byte's stand-in. Characters that
  // are no byte's stand-in (only in added tokens, which BPE never produces) are kept as
  // their UTF-8 (Hugging Face raises KeyError there).
  const std::array<uint32_t, 256> byteToCp = byteToCodePoint();
  std::array<int16_t, 512> cpToByte;
  cpToByte.fill(-1);
  for (int b = 0; b < 256; ++b) cpToByte[byteToCp[b]] = static_cast<int16_t>(b);
  impl->tokenBytes.resize(entries.size());
  for (const Entry& entry : entries) {
    std::string& bytes = impl->tokenBytes[entry.id];
    std::string_view token = entry.token;
    for (size_t pos = 0; pos < token.size();) {
      uint32_t cp = 0;
      size_t length = decodeUtf8(token, pos, &cp);  // the JSON reader checked the UTF-8
      if (length == 0) {
        length = 1;
        cp = 0xFFFD;
      }
      if (cp < cpToByte.size() && cpToByte[cp] >= 0) {
        bytes += static_cast<char>(cpToByte[cp]);
      } else {
        bytes.append(token.substr(pos, length));
      }
      pos += length;
    }
  }
  for (int b = 0; b < 256; ++b) {
    std::string standIn;
    appendUtf8(byteToCp[b], &standIn);
    auto it = encoder.find(standIn);
    if (it == encoder.end()) {
      return Status::error(TFC_DATA_LOSS, "%s: no token for byte 0x%02X (%s)", vocabName.c_str(),
                           b, internal::quoteForMessage(standIn).c_str());
    }
    impl->byteIds[b] = it->second;
  }
  auto eos = encoder.find(std::string(kEndOfText));
  if (eos != encoder.end()) impl->eos = eos->second;

  // merges.txt: "a b" per line, in rank order, after an optional "#version" line.
  size_t lineNumber = 0;
  int32_t rank = 0;
  for (size_t pos = 0; pos < mergesText.size();) {
    size_t newline = mergesText.find('\n', pos);
    size_t lineEnd = newline == std::string_view::npos ? mergesText.size() : newline;
    std::string_view line = mergesText.substr(pos, lineEnd - pos);
    pos = newline == std::string_view::npos ? mergesText.size() : newline + 1;
    ++lineNumber;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (lineNumber == 1 && line.substr(0, 8) == "#version") continue;
    size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      return Status::error(TFC_DATA_LOSS,
                           "%s:%zu: expected two tokens separated by one space, got %s",
                           mergesName.c_str(), lineNumber, internal::quoteForMessage(line).c_str());
    }
    std::string parts[3] = {std::string(line.substr(0, space)), std::string(line.substr(space + 1)),
                            std::string()};
    parts[2] = parts[0] + parts[1];
    int32_t partIds[3];
    for (int k = 0; k < 3; ++k) {
      auto it = encoder.find(parts[k]);
      if (it == encoder.end()) {
        return Status::error(TFC_DATA_LOSS, "%s:%zu: %s %s is not in %s", mergesName.c_str(),
                             lineNumber, k < 2 ? "token" : "the merged token",
                             internal::quoteForMessage(parts[k]).c_str(), vocabName.c_str());
      }
      partIds[k] = it->second;
    }
    // A repeated merge takes the later rank, as a Python dict built from the list does.
    impl->merges[pairKey(partIds[0], partIds[1])] = Impl::Merge{rank, partIds[2]};
    ++rank;
  }
  return Gpt2Tokenizer(std::move(impl));
}

std::vector<int32_t> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  if (!impl_->eos) {
    impl_->encodeOrdinary(text, &ids);
    return ids;
  }
  size_t pos = 0;
  while (true) {
    size_t found = text.find(kEndOfText, pos);
    if (found == std::string_view::npos) break;
    impl_->encodeOrdinary(text.substr(pos, found - pos), &ids);
    ids.push_back(*impl_->eos);
    pos = found + kEndOfText.size();
  }
  impl_->encodeOrdinary(text.substr(pos), &ids);
  return ids;
}

StatusOr<std::string> Gpt2Tokenizer::decode(const int32_t* ids, size_t count) const {
  std::string out;
  const int32_t size = vocabSize();
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= size) {
      return Status::error(TFC_INVALID_ARGUMENT,
                           "token id %d (at position %zu) is outside the vocabulary [0, %d)",
                           ids[i], i, size);
    }
    out += impl_->tokenBytes[ids[i]];
  }
  return out;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string& spec) {
  if (spec == "bytes") return std::unique_ptr<Tokenizer>(std::make_unique<ByteTokenizer>());
  TFC_ASSIGN_OR_RETURN(Gpt2Tokenizer bpe, Gpt2Tokenizer::load(spec));
  return std::unique_ptr<Tokenizer>(std::make_unique<Gpt2Tokenizer>(std::move(bpe)));
}

std::vector<int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

StatusOr<std::string> ByteTokenizer::decode(const int32_t* ids, size_t count) const {
  std::string out(count, '\0');
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= 256) {
      return Status::error(TFC_INVALID_ARGUMENT,
                           "token id %d (at position %zu) is not a byte: the byte tokenizer's "
                           "ids are 0..255",
                           ids[i], i);
    }
    out[i] = static_cast<char>(ids[i]);
  }
  return out;
}

int32_t Gpt2Tokenizer::vocabSize() const { return static_cast<int32_t>(impl_->tokenBytes.size()); }

std::optional<int32_t> Gpt2Tokenizer::eosId() const { return impl_->eos; }

// GPT-2's pattern ends a piece at the character before such a space whatever follows it
// (letters, digits and other symbols stop at a space; contractions have fixed length) and
// starts one at the space (" ?\p{L}+", " ?\p{N}+" or " ?[^\s\p{L}\p{N}]+", as the next
// character is none of \s) whatever precedes it, so the pieces on either side are those
// of the whole text. "<|endoftext|>" holds no space, so it is never cut either.
size_t Gpt2Tokenizer::nextSplit(std::string_view text, size_t from) const {
  auto printable = [](char c) { return c > ' ' && c < 0x7F; };
  for (size_t p = std::max<size_t>(from, 1); p + 1 < text.size(); ++p) {
    if (text[p] == ' ' && printable(text[p - 1]) && printable(text[p + 1])) return p;
  }
  return text.size();
}

std::optional<size_t> Gpt2Tokenizer::firstInvalidUtf8(std::string_view bytes) {
  for (size_t pos = 0; pos < bytes.size();) {
    uint32_t cp = 0;
    size_t length = decodeUtf8(bytes, pos, &cp);
    if (length == 0) return pos;
    pos += length;
  }
  return std::nullopt;
}

std::string Gpt2Tokenizer::replaceInvalidUtf8(std::string_view bytes) {
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
    if (lead >= 0xC2 && lead <= 0xDF) neededLength = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) neededLength = 3;
    else if (lead >= 0xF0 && lead <= 0xF4) neededLength = 4;
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

}  // namespace tfc
