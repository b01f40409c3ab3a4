#include "tfc/runtime/token_data.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tfc/runtime/file.hpp"
#include "tfc/runtime/npy.hpp"
#include "tfc/runtime/tensor.hpp"

namespace tfc {
namespace {

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string withCommas(uint64_t value) {
  std::string digits = std::to_string(value), text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text;
}

// The whole file, mapped read-only (or an empty mapping for an empty file).
StatusOr<std::shared_ptr<const void>> mapFile(const std::string& path, size_t* outSize) {
  // Refuses a FIFO or a device without blocking in open().
  TFC_ASSIGN_OR_RETURN(int fd, openRegularFileForRead(path));
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    return Status::error(TFC_IO_ERROR, "%s: cannot stat: %s", path.c_str(), std::strerror(error));
  }
  size_t size = static_cast<size_t>(info.st_size);
  *outSize = size;
  if (size == 0) {
    ::close(fd);
    return std::shared_ptr<const void>(nullptr);
  }
  void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int error = errno;
  ::close(fd);
  if (mapped == MAP_FAILED) {
    return Status::error(TFC_IO_ERROR, "%s: cannot map the data file: %s", path.c_str(),
                         std::strerror(error));
  }
  ::madvise(mapped, size, MADV_RANDOM);
  return std::shared_ptr<const void>(mapped, [size](const void* p) {
    ::munmap(const_cast<void*>(p), size);
  });
}

}  // namespace

StatusOr<TokenData> TokenData::open(const std::string& path, TokenFileDtype dtype) {
  size_t size = 0;
  auto mapped = mapFile(path, &size);
  if (!mapped.ok()) return std::move(mapped).takeStatus();
  return parse(static_cast<const uint8_t*>(mapped->get()), size, path, dtype, *mapped);
}

StatusOr<TokenData> TokenData::parse(const uint8_t* bytes, size_t size, const std::string& path,
                                     TokenFileDtype dtype, std::shared_ptr<const void> owner) {
  TokenData data;
  data.path_ = path;
  if (endsWith(path, ".npy")) {
    auto tensor = parseNpy(bytes, size, path);
    if (!tensor.ok()) return std::move(tensor).takeStatus();
    if (tensor->rank() != 1) {
      return Status::error(TFC_INVALID_ARGUMENT,
                           "%s: a token file in .npy form must be a 1-D array; this one has "
                           "shape %s",
                           path.c_str(), formatShape(tensor->shape()).c_str());
    }
    Kind kind;
    switch (tensor->dtype()) {
      case TFC_DTYPE_U8: kind = Kind::kU8; break;
      case TFC_DTYPE_U16: kind = Kind::kU16; break;
      case TFC_DTYPE_U32: kind = Kind::kU32; break;
      case TFC_DTYPE_U64: kind = Kind::kU64; break;
      case TFC_DTYPE_I8: kind = Kind::kI8; break;
      case TFC_DTYPE_I16: kind = Kind::kI16; break;
      case TFC_DTYPE_I32: kind = Kind::kI32; break;
      case TFC_DTYPE_I64: kind = Kind::kI64; break;
      default:
        return Status::error(TFC_INVALID_ARGUMENT,
                             "%s: token ids must be integers; this .npy holds %s", path.c_str(),
                             tfc_dtype_name(tensor->dtype()));
    }
    // parseNpy copied the tokens into the tensor, which now owns them.
    auto owned = std::make_shared<HostTensor>(std::move(tensor).value());
    data.kind_ = kind;
    data.elementSize_ = tfc_dtype_size(owned->dtype());
    data.count_ = static_cast<size_t>(owned->numElements());
    data.data_ = static_cast<const uint8_t*>(owned->data());
    data.format_ = std::string(tfc_dtype_name(owned->dtype())) + " .npy";
    data.owner_ = owned;
    return data;
  }
  data.owner_ = std::move(owner);
  int32_t header[3] = {0, 0, 0};
  if (size >= kLlmcHeaderBytes) std::memcpy(header, bytes, sizeof(header));
  if (size >= kLlmcHeaderBytes && header[0] == kLlmcMagic) {
    if (header[1] != 1 && header[1] != 2) {
      return Status::error(TFC_INVALID_ARGUMENT,
                           "%s: llm.c data file of version %d; this reader knows version 1 "
                           "(uint16 tokens) and 2 (uint32 tokens)",
                           path.c_str(), header[1]);
    }
    data.kind_ = header[1] == 1 ? Kind::kU16 : Kind::kU32;
    data.elementSize_ = header[1] == 1 ? 2 : 4;
    uint64_t expected = static_cast<uint64_t>(static_cast<uint32_t>(header[2]));
    uint64_t present = (size - kLlmcHeaderBytes) / data.elementSize_;
    if (header[2] < 0 || expected * data.elementSize_ != size - kLlmcHeaderBytes) {
      return Status::error(TFC_INVALID_ARGUMENT,
                           "%s: the llm.c header announces %lld tokens but the file holds "
                           "%llu bytes of tokens (%llu tokens); is it truncated?",
                           path.c_str(), static_cast<long long>(header[2]),
                           static_cast<unsigned long long>(size - kLlmcHeaderBytes),
                           static_cast<unsigned long long>(present));
    }
    data.data_ = bytes + kLlmcHeaderBytes;
    data.count_ = static_cast<size_t>(expected);
    data.format_ = std::string("llm.c v") + std::to_string(header[1]) +
                   (header[1] == 1 ? " (uint16)" : " (uint32)");
    return data;
  }
  data.elementSize_ = dtype == TokenFileDtype::kUint16 ? 2 : 4;
  data.kind_ = dtype == TokenFileDtype::kUint16 ? Kind::kU16 : Kind::kU32;
  if (size % data.elementSize_ != 0) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: %llu bytes is not a whole number of %s tokens (give "
                         "--data-dtype if the file is not %s)",
                         path.c_str(), static_cast<unsigned long long>(size),
                         dtype == TokenFileDtype::kUint16 ? "uint16" : "uint32",
                         dtype == TokenFileDtype::kUint16 ? "uint16" : "uint32");
  }
  data.data_ = bytes;
  data.count_ = size / data.elementSize_;
  data.format_ = dtype == TokenFileDtype::kUint16 ? "uint16 .bin" : "uint32 .bin";
  return data;
}

std::string TokenData::describe() const {
  return format_ + ", " + withCommas(count_) + " tokens";
}

Status TokenData::checkVocab(int64_t vocab) const {
  bool isSigned = kind_ == Kind::kI8 || kind_ == Kind::kI16 || kind_ == Kind::kI32 ||
                  kind_ == Kind::kI64;
  for (size_t i = 0; i < count_; ++i) {
    uint64_t token = at(i);
    bool bad = isSigned ? static_cast<int64_t>(token) < 0 || static_cast<int64_t>(token) >= vocab
                        : token >= static_cast<uint64_t>(vocab);
    if (bad) {
      std::string value = isSigned ? std::to_string(static_cast<int64_t>(token))
                                   : std::to_string(token);
      return Status::error(TFC_INVALID_ARGUMENT,
                           "%s: token id %s at offset %llu (in tokens) is out of range for "
                           "the model's vocabulary of %lld (valid ids: 0..%lld)",
                           path_.c_str(), value.c_str(), static_cast<unsigned long long>(i),
                           static_cast<long long>(vocab), static_cast<long long>(vocab - 1));
    }
  }
  return Status();
}

Status TokenData::checkLength(int64_t seq) const {
  if (count_ == 0) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: the data file holds no tokens", path_.c_str());
  }
  if (count_ < static_cast<size_t>(seq) + 2) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: holds %llu tokens, too few for batches of rows of %lld tokens "
                         "(need at least T + 2 = %lld: a row and its shifted target)",
                         path_.c_str(), static_cast<unsigned long long>(count_),
                         static_cast<long long>(seq), static_cast<long long>(seq + 2));
  }
  return Status();
}

uint64_t SplitMix64::below(uint64_t bound) {
  // Lemire's nearly divisionless method on the top 64 bits of a 128-bit product.
  __uint128_t product = static_cast<__uint128_t>(next()) * bound;
  uint64_t low = static_cast<uint64_t>(product);
  if (low < bound) {
    uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      product = static_cast<__uint128_t>(next()) * bound;
      low = static_cast<uint64_t>(product);
    }
  }
  return static_cast<uint64_t>(product >> 64);
}

void BatchSampler::next(int32_t* x, int32_t* y) {
  uint64_t range = data_->size() - static_cast<uint64_t>(seq_) - 1;  // offsets [0, len-T-1)
  const int64_t first = static_cast<int64_t>(rank_) * batch_;
  for (int64_t row = 0; row < batch_ * world_; ++row) {
    uint64_t offset = rng_.below(range);  // drawn for every row, kept for this rank's
    if (row < first || row >= first + batch_) continue;
    const int64_t b = row - first;
    for (int64_t t = 0; t < seq_; ++t) {
      x[b * seq_ + t] = static_cast<int32_t>(data_->at(offset + static_cast<uint64_t>(t)));
      y[b * seq_ + t] = static_cast<int32_t>(data_->at(offset + static_cast<uint64_t>(t) + 1));
    }
  }
  ++drawn_;
}

}  // namespace tfc
