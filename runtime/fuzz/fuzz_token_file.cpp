// libFuzzer target: feeds arbitrary bytes to the trainer's token-file parser
// (TokenData::parse: headerless uint16/uint32 .bin, llm.c .bin, 1-D integer .npy), then
// checks and samples what it accepted as `train` does. Any crash, sanitizer report or abort
// is a bug; errors must come back as a Status naming the file.
//
// The first input byte picks the file kind (bit 0: .npy name, bit 1: --data-dtype uint32);
// the rest is the file.
//   ninja -C build-fuzz fuzz-token-file && build-fuzz/fuzz-token-file runtime/fuzz/corpus/token_file
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tfc/runtime/token_data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool npy = (data[0] & 1) != 0;
  const auto dtype = (data[0] & 2) != 0 ? tfc::TokenFileDtype::kUint32
                                        : tfc::TokenFileDtype::kUint16;
  const std::string name = npy ? "fuzz.npy" : "fuzz.bin";
  // A copy of exactly the file's bytes, so that ASan sees any read past its end.
  auto bytes = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(std::malloc(size - 1 + 1)), std::free);
  std::memcpy(bytes.get(), data + 1, size - 1);
  auto tokens = tfc::TokenData::parse(bytes.get(), size - 1, name, dtype, bytes);
  if (!tokens.ok()) {
    if (std::strstr(tokens.status().message(), name.c_str()) == nullptr) std::abort();
    return 0;
  }
  // Every token is readable.
  uint64_t checksum = 0;
  for (size_t i = 0; i < tokens->size(); ++i) checksum += tokens->at(i);
  // As train does: the vocabulary and length checks, then batches from what passed them.
  const int64_t vocab = 50257, seq = 4, batch = 2;
  tfc::Status status = tokens->checkVocab(vocab);
  if (!status.ok() && std::strstr(status.message(), name.c_str()) == nullptr) std::abort();
  tfc::Status length = tokens->checkLength(seq);
  if (!length.ok() && std::strstr(length.message(), name.c_str()) == nullptr) std::abort();
  if (status.ok() && length.ok()) {
    tfc::BatchSampler sampler(&*tokens, batch, seq, checksum);
    std::vector<int32_t> x(batch * seq), y(batch * seq);
    for (int i = 0; i < 4; ++i) {
      sampler.next(x.data(), y.data());
      for (size_t k = 0; k < x.size(); ++k) {
        if (x[k] < 0 || x[k] >= vocab || y[k] < 0 || y[k] >= vocab) std::abort();
      }
    }
  }
  return 0;
}
