// libFuzzer target: feeds arbitrary vocab.json and merges.txt contents to the GPT-2
// tokenizer's loader (Gpt2Tokenizer::fromContents), and for tokenizers that load, checks
// that encode/decode round-trip arbitrary bytes (the documented contract: any byte string
// round-trips). Any crash, sanitizer report or abort is a bug; load errors must come back
// as a Status naming one of the files.
//
// Input: vocab.json's bytes, a NUL byte, merges.txt's bytes (a NUL cannot occur in valid
// JSON, so any valid pair of files is expressible); without a NUL, merges.txt is empty.
//   ninja -C build-fuzz fuzz-tokenizer && build-fuzz/fuzz-tokenizer runtime/fuzz/corpus/tokenizer
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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
  // Out-of-range ids are an error, not a read out of bounds.
  if (tokenizer->decode({tokenizer->vocabSize()}).ok()) std::abort();
  if (tokenizer->decode({-1}).ok()) std::abort();
  return 0;
}
