// libFuzzer target: feeds arbitrary vocab.json and merges.txt contents to the GPT-2
// tokenizer's loader (Gpt2Tokenizer::fromContents), and for tokenizers that load, checks
// that encode/decode round-trip arbitrary bytes (the documented contract: any byte string
// round-trips), that nextSplit's pieces encode as the whole does, and that firstInvalidUtf8
// agrees with replaceInvalidUtf8. Any crash, sanitizer report or abort is a bug; load
// errors must come back as a Status naming one of the files.
//
// Input: vocab.json's bytes, a NUL byte, merges.txt's bytes (a NUL cannot occur in valid
// JSON, so any valid pair of files is expressible); without a NUL, merges.txt is empty.
//   ninja -C build-fuzz fuzz-tokenizer && build-fuzz/fuzz-tokenizer runtime/fuzz/corpus/tokenizer
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "tfc/runtime/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  // Separate heap copies so that ASan sees reads past the end of either file.
  std::string vocab(input.substr(0, nul));
  std::string merges(nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1));
  auto tokenizer = tfc::Gpt2Tokenizer::fromContents(vocab, merges, "fuzz/vocab.json",
                                                    "fuzz/merges.txt");
  if (!tokenizer.ok()) {
    if (std::strstr(tokenizer.status().message(), "fuzz/") == nullptr) std::abort();
    return 0;
  }
  // Round trips: the merges text itself (bytes the mutator controls), fixed text with
  // the special token, and invalid UTF-8.
  const std::string texts[] = {merges.substr(0, 256), "Hello <|endoftext|> world's 42!!",
                               std::string("\xff\xfe a\xc3", 5)};
  for (const std::string& text : texts) {
    std::vector<int32_t> ids = tokenizer->encode(text);
    for (int32_t id : ids) {
      if (id < 0 || id >= tokenizer->vocabSize()) std::abort();
    }
    auto decoded = tokenizer->decode(ids);
    if (!decoded.ok() || *decoded != text) std::abort();
  }
  // Encoding in pieces cut at nextSplit gives the ids of the whole (tokenize relies on it),
  // and firstInvalidUtf8 points at the first byte replaceInvalidUtf8 replaces.
  for (const std::string& text : texts) {
    std::vector<int32_t> pieces;
    for (size_t at = 0; at < text.size();) {
      size_t next = tokenizer->nextSplit(text, at + 1);
      if (next <= at || next > text.size()) std::abort();
      std::vector<int32_t> ids = tokenizer->encode(std::string_view(text).substr(at, next - at));
      pieces.insert(pieces.end(), ids.begin(), ids.end());
      at = next;
    }
    if (pieces != tokenizer->encode(text)) std::abort();
    std::optional<size_t> bad = tfc::Gpt2Tokenizer::firstInvalidUtf8(text);
    std::string replaced = tfc::Gpt2Tokenizer::replaceInvalidUtf8(text);
    if (bad ? replaced.compare(*bad, 3, "\xEF\xBF\xBD") != 0 ||
                  replaced.compare(0, *bad, text, 0, *bad) != 0
            : replaced != text) {
      std::abort();
    }
  }
  // Out-of-range ids are an error, not a read out of bounds.
  if (tokenizer->decode({tokenizer->vocabSize()}).ok()) std::abort();
  if (tokenizer->decode({-1}).ok()) std::abort();
  return 0;
}
