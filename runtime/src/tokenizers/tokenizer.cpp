#include "tfc/runtime/tokenizer.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "tokenizers/bpe.hpp"
#include "base/file_util.hpp"
#include "base/json_reader.hpp"
#include "tokenizers/split_patterns.hpp"
#include "tfc/runtime/hf_tokenizer.hpp"
#include "base/unicode.hpp"

namespace tfc {
namespace {

using internal::appendUtf8;
using internal::decodeUtf8;

// 1-based line number of byte |offset| in |text|.
size_t lineOf(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

}  // namespace

struct Gpt2Tokenizer::Impl {
  std::vector<std::string> tokenBytes;  // id -> the token's raw bytes
  std::array<int32_t, 256> byteIds{};   // byte -> the id of its single-byte token
  internal::BpeMerges merges;
  std::optional<int32_t> eos;

  internal::BpeWordCache wordCache;

  void encodeOrdinary(std::string_view text, std::vector<int32_t>* out) const;
  void encodeWord(std::string_view word, std::vector<int32_t>* out) const;
  void bpe(std::string_view word, std::vector<int32_t>* out) const;
};

void Gpt2Tokenizer::Impl::encodeOrdinary(std::string_view text, std::vector<int32_t>* out) const {
  std::vector<size_t> ends;
  internal::splitByPattern(text, internal::SplitPattern::kGpt2, &ends);
  size_t begin = 0;
  for (size_t end : ends) {
    encodeWord(text.substr(begin, end - begin), out);
    begin = end;
  }
}

void Gpt2Tokenizer::Impl::encodeWord(std::string_view word, std::vector<int32_t>* out) const {
  if (word.size() == 1) {
    out->push_back(byteIds[static_cast<unsigned char>(word[0])]);
    return;
  }
  wordCache.tokens(word, out, [this](std::string_view w, std::vector<int32_t>* o) { bpe(w, o); });
}

// Byte-pair merging as in Hugging Face's GPT2Tokenizer.bpe(), from the word's bytes.
void Gpt2Tokenizer::Impl::bpe(std::string_view word, std::vector<int32_t>* out) const {
  std::vector<int32_t> ids(word.size());
  for (size_t i = 0; i < word.size(); ++i) ids[i] = byteIds[static_cast<unsigned char>(word[i])];
  internal::bpeMerge(std::move(ids), merges, out);
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
  const std::array<uint32_t, 256> byteToCp = internal::byteToCodePoint();
  const std::array<int16_t, 512> cpToByte = internal::codePointToByte();
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
    impl->merges[internal::bpePairKey(partIds[0], partIds[1])] = internal::BpeMerge{rank, partIds[2]};
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
  // "" would be read as the folder "" and look for "/vocab.json" at the root.
  if (spec.empty()) {
    return Status(TFC_INVALID_ARGUMENT,
                  "the tokenizer's path is empty (give a tokenizer.json, its folder, or bytes)");
  }
  // A file (or a name ending in .json) is a tokenizer.json; a folder is read by its
  // tokenizer.json when it has one, else as GPT-2's (whose errors name vocab.json).
  struct stat info;
  bool isFile = ::stat(spec.c_str(), &info) == 0 && !S_ISDIR(info.st_mode);
  bool jsonName = spec.size() >= 5 && spec.compare(spec.size() - 5, 5, ".json") == 0;
  if (isFile || jsonName || ::stat((spec + "/tokenizer.json").c_str(), &info) == 0) {
    TFC_ASSIGN_OR_RETURN(HfTokenizer hf, HfTokenizer::load(spec));
    return std::unique_ptr<Tokenizer>(std::make_unique<HfTokenizer>(std::move(hf)));
  }
  TFC_ASSIGN_OR_RETURN(Gpt2Tokenizer bpe, Gpt2Tokenizer::load(spec));
  return std::unique_ptr<Tokenizer>(std::make_unique<Gpt2Tokenizer>(std::move(bpe)));
}

std::vector<int32_t> Tokenizer::encodePrompt(std::string_view text) const {
  std::vector<int32_t> ids;
  if (std::optional<int32_t> bos = bosId()) ids.push_back(*bos);
  std::vector<int32_t> encoded = encode(text);
  ids.insert(ids.end(), encoded.begin(), encoded.end());
  return ids;
}

StatusOr<std::string> Tokenizer::decodeText(const std::vector<int32_t>& ids) const {
  TFC_ASSIGN_OR_RETURN(std::string bytes, decode(ids));
  return internal::replaceInvalidUtf8(bytes);
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
  return internal::firstInvalidUtf8(bytes);
}

std::string Gpt2Tokenizer::replaceInvalidUtf8(std::string_view bytes) {
  return internal::replaceInvalidUtf8(bytes);
}

}  // namespace tfc
