// A command-line helper for hf_tokenizer_check.py, which cross-checks the runtime's
// tokenizers against Hugging Face's `tokenizers`:
//   tfc-runtime-tokenizer-tool SPEC TEXTS
// loads the tokenizer SPEC (as Tokenizer::load does) and prints
//   kind KIND vocab N bos ID|- eos ID|-
// then, for each text of the file TEXTS (texts separated by 0xFF bytes, which UTF-8 never has), two
// lines:
//   ids ID ID ...              encode(text)
//   text HEX                   decodeText(ids), as hex bytes
// After each text it checks, and reports as "error: ..." lines, what a caller relies on:
// decode() token by token concatenates to decode() of all, and encoding in the pieces
// that nextSplit() gives equals encoding the whole. Exits with status 1 on any error.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tfc/runtime/tokenizer.hpp"

namespace {

std::string hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SPEC TEXTS\n", argv[0]);
    return 2;
  }
  auto loaded = tfc::Tokenizer::load(argv[1]);
  if (!loaded.ok()) {
    std::fprintf(stderr, "error: %s\n", loaded.status().toString().c_str());
    return 1;
  }
  const tfc::Tokenizer& tokenizer = **loaded;
  std::ifstream file(argv[2], std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "error: cannot read %s\n", argv[2]);
    return 1;
  }
  std::string all((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto optionalId = [](std::optional<int32_t> id) { return id ? std::to_string(*id) : "-"; };
  std::printf("kind %s vocab %d bos %s eos %s\n", std::string(tokenizer.kind()).c_str(),
              tokenizer.vocabSize(), optionalId(tokenizer.bosId()).c_str(),
              optionalId(tokenizer.eosId()).c_str());
  int errors = 0;
  size_t index = 0;
  for (size_t begin = 0; begin <= all.size(); ++index) {
    size_t end = all.find('\xff', begin);
    if (end == std::string::npos) end = all.size();
    std::string text = all.substr(begin, end - begin);
    begin = end + 1;
    std::vector<int32_t> ids = tokenizer.encode(text);
    std::printf("ids");
    for (int32_t id : ids) std::printf(" %d", id);
    auto decoded = tokenizer.decodeText(ids);
    auto bytes = tokenizer.decode(ids);
    if (!decoded.ok() || !bytes.ok()) {
      std::printf("\nerror: text %zu: %s\n", index,
                  (decoded.ok() ? bytes.status() : decoded.status()).toString().c_str());
      ++errors;
      continue;
    }
    std::printf("\ntext %s\n", hex(*decoded).c_str());
    std::string streamed;
    for (int32_t id : ids) streamed += *tokenizer.decode(&id, 1);
    if (streamed != *bytes) {
      std::printf("error: text %zu: decoding token by token differs from decoding all\n", index);
      ++errors;
    }
    std::vector<int32_t> pieces;
    for (size_t at = 0; at < text.size();) {
      size_t cut = tokenizer.nextSplit(text, at + 1);
      std::vector<int32_t> part = tokenizer.encode(std::string_view(text).substr(at, cut - at));
      pieces.insert(pieces.end(), part.begin(), part.end());
      at = cut;
    }
    if (pieces != ids) {
      std::printf("error: text %zu: encoding in the pieces of nextSplit differs\n", index);
      ++errors;
    }
  }
  return errors == 0 ? 0 : 1;
}
