// libFuzzer target: feeds arbitrary tokenizer.json contents to HfTokenizer::fromContents,
// and for tokenizers that load, encodes texts and checks what callers rely on: ids in
// range, decode() of them succeeding and equal to decoding them one at a time (streaming),
// decodeText() valid UTF-8, and nextSplit's pieces encoding as the whole does. Any crash,
// sanitizer report or abort is a bug; load errors must come back as a Status naming the
// file.
//
// Input: tokenizer.json's bytes, then optionally a NUL byte and a text to encode (a NUL
// cannot occur in valid JSON).
//   ninja -C build-fuzz fuzz-hf-tokenizer && build-fuzz/fuzz-hf-tokenizer \
//       runtime/fuzz/corpus/hf_tokenizer
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tfc/runtime/hf_tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  // Separate heap copies so that ASan sees reads past the end of either part.
  std::string json(input.substr(0, nul));
  std::string text(nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1));
  tfc::HfTokenizer::Files files;
  files.tokenizerJson = json;
  files.tokenizerJsonName = "fuzz/tokenizer.json";
  auto tokenizer = tfc::HfTokenizer::fromContents(files);
  if (!tokenizer.ok()) {
    if (std::strstr(tokenizer.status().message(), "fuzz/tokenizer.json") == nullptr) std::abort();
    return 0;
  }
  const std::string texts[] = {text.substr(0, 512),
                               "Hello <|endoftext|> world's 42!!\n\nx </s><s> \xC3\xA9 e\xCC\x81",
                               std::string("\xff\xfe a\xc3", 5)};
  for (const std::string& t : texts) {
    std::vector<int32_t> ids = tokenizer->encode(t);
    for (int32_t id : ids) {
      if (id < 0 || id >= tokenizer->vocabSize()) std::abort();
    }
    auto bytes = tokenizer->decode(ids);
    if (!bytes.ok()) std::abort();
    std::string streamed;
    for (int32_t id : ids) streamed += *tokenizer->decode(&id, 1);
    if (streamed != *bytes) std::abort();
    auto decoded = tokenizer->decodeText(ids);
    if (!decoded.ok() || tfc::Gpt2Tokenizer::firstInvalidUtf8(*decoded)) std::abort();
    std::vector<int32_t> pieces;
    for (size_t at = 0; at < t.size();) {
      size_t next = tokenizer->nextSplit(t, at + 1);
      if (next <= at || next > t.size()) std::abort();
      std::vector<int32_t> part = tokenizer->encode(std::string_view(t).substr(at, next - at));
      pieces.insert(pieces.end(), part.begin(), part.end());
      at = next;
    }
    if (pieces != ids) std::abort();
  }
  if (tokenizer->decode({tokenizer->vocabSize()}).ok()) std::abort();
  if (tokenizer->decode({-1}).ok()) std::abort();
  if (auto bos = tokenizer->bosId(); bos && !tokenizer->decode({*bos}).ok()) std::abort();
  if (auto eos = tokenizer->eosId(); eos && !tokenizer->decode({*eos}).ok()) std::abort();
  return 0;
}
