#include "tfc/runtime/npy.hpp"

#include <cstring>
#include <string_view>

#include "base/file_util.hpp"

namespace tfc {
namespace {

using internal::quoteForMessage;

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// NumPy aligns the start of the data to this many bytes.
constexpr size_t kDataAlignment = 64;

// The three entries of a .npy header.
struct NpyHeader {
  tfc_dtype_t dtype = TFC_DTYPE_INVALID;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

std::string supportedDescrs() {
  std::string descrs;
  for (int i = 1; i < TFC_DTYPE_COUNT; ++i) {
    const char* descr = tfc_dtype_npy_descr(static_cast<tfc_dtype_t>(i));
    if (descr == nullptr) continue;
    if (!descrs.empty()) descrs += ' ';
    descrs += descr;
  }
  return descrs;
}

// Parses the header: the subset of Python literal syntax that NumPy writes (a dict of
// strings, booleans and a tuple of integers). Anything else is refused.
class NpyHeaderParser {
 public:
  explicit NpyHeaderParser(std::string_view text) : text_(text) {}

  bool parse(NpyHeader* header) {
    bool sawDescr = false, sawFortranOrder = false, sawShape = false;
    skipWhitespace();
    if (!expect('{', "the header must be a Python dict starting with '{'")) return false;
    while (true) {
      skipWhitespace();
      if (consume('}')) break;
      std::string key;
      if (!readString(&key, "expected a string key")) return false;
      skipWhitespace();
      if (!expect(':', "expected ':' after a key")) return false;
      skipWhitespace();
      if (key == "descr") {
        if (sawDescr) return fail("duplicate key 'descr'");
        sawDescr = true;
        if (!parseDescr(&header->dtype)) return false;
      } else if (key == "fortran_order") {
        if (sawFortranOrder) return fail("duplicate key 'fortran_order'");
        sawFortranOrder = true;
        if (!parseBool(&header->fortranOrder)) return false;
      } else if (key == "shape") {
        if (sawShape) return fail("duplicate key 'shape'");
        sawShape = true;
        if (!parseShape(&header->shape)) return false;
      } else {
        return fail("unexpected key " + quoteForMessage(key) +
                    " (a header has exactly 'descr', 'fortran_order' and 'shape')");
      }
      skipWhitespace();
      if (consume(',')) continue;
      if (consume('}')) break;
      return fail("expected ',' or '}' after a value");
    }
    skipWhitespace();
    if (position_ != text_.size()) return fail("trailing data after the header dict");
    if (!sawDescr) return fail("missing key 'descr'");
    if (!sawFortranOrder) return fail("missing key 'fortran_order'");
    if (!sawShape) return fail("missing key 'shape'");
    return true;
  }

  const std::string& error() const { return error_; }
  tfc_status_code_t code() const { return code_; }

 private:
  bool fail(const std::string& message) {
    if (error_.empty()) error_ = "header byte " + std::to_string(position_) + ": " + message;
    return false;
  }
  bool unsupported(const std::string& message) {
    code_ = TFC_UNIMPLEMENTED;
    if (error_.empty()) error_ = message;
    return false;
  }

  char peek() const { return position_ < text_.size() ? text_[position_] : '\0'; }
  bool consume(char c) {
    if (peek() != c || position_ >= text_.size()) return false;
    ++position_;
    return true;
  }
  bool expect(char c, const char* message) { return consume(c) || fail(message); }
  void skipWhitespace() {
    while (position_ < text_.size() &&
           (text_[position_] == ' ' || text_[position_] == '\t' || text_[position_] == '\n' ||
            text_[position_] == '\r')) {
      ++position_;
    }
  }

  // A quoted string without escapes (NumPy never writes any in the three keys' values).
  bool readString(std::string* out, const char* message) {
    char quote = peek();
    if (quote != '\'' && quote != '"') return fail(message);
    size_t start = ++position_;
    while (position_ < text_.size() && text_[position_] != quote) {
      unsigned char c = static_cast<unsigned char>(text_[position_]);
      if (c == '\\') return fail("escape sequences are not supported in header strings");
      if (c < 0x20 || c >= 0x7f) return fail("unexpected character in a header string");
      ++position_;
    }
    if (position_ >= text_.size()) return fail("unterminated string");
    out->assign(text_.substr(start, position_ - start));
    ++position_;
    return true;
  }

  bool parseDescr(tfc_dtype_t* dtype) {
    if (peek() == '[') {
      return unsupported("structured dtypes (a list 'descr') are not supported");
    }
    std::string descr;
    if (!readString(&descr, "'descr' must be a string such as '<f4'")) return false;
    if (tfc_dtype_from_npy_descr(descr.data(), descr.size(), dtype)) return true;
    if (descr.size() >= 2 && descr[0] == '>') {
      return unsupported("big-endian dtype descr " + quoteForMessage(descr) +
                         " is not supported; convert with arr.astype(arr.dtype.newbyteorder('<'))");
    }
    return unsupported("unsupported dtype descr " + quoteForMessage(descr, 40) +
                       " (supported: " + supportedDescrs() + ")");
  }

  bool parseBool(bool* out) {
    if (text_.substr(position_, 4) == "True") {
      position_ += 4;
      *out = true;
    } else if (text_.substr(position_, 5) == "False") {
      position_ += 5;
      *out = false;
    } else {
      return fail("'fortran_order' must be True or False");
    }
    return true;
  }

  // A tuple of non-negative integers: (), (3,), (2, 3) or (2, 3,); Python 2's "3L" too.
  bool parseShape(std::vector<int64_t>* shape) {
    if (!expect('(', "'shape' must be a tuple of integers")) return false;
    bool trailingComma = false;
    while (true) {
      skipWhitespace();
      if (consume(')')) break;
      if (peek() == '-') return fail("negative dimension in 'shape'");
      if (shape->size() == kMaxRank) {
        return fail("'shape' has more than " + std::to_string(kMaxRank) + " dimensions");
      }
      int64_t dim = 0;
      if (!readDimension(&dim)) return false;
      shape->push_back(dim);
      skipWhitespace();
      trailingComma = consume(',');
      if (trailingComma) continue;
      if (consume(')')) break;
      return fail("expected ',' or ')' in 'shape'");
    }
    // "(3)" is the integer 3 in Python, not a tuple.
    if (shape->size() == 1 && !trailingComma) return fail("'shape' (n) is not a tuple; need (n,)");
    return true;
  }

  bool readDimension(int64_t* out) {
    size_t start = position_;
    int64_t value = 0;
    while (position_ < text_.size() && text_[position_] >= '0' && text_[position_] <= '9') {
      if (__builtin_mul_overflow(value, int64_t{10}, &value) ||
          __builtin_add_overflow(value, int64_t{text_[position_] - '0'}, &value)) {
        return fail("dimension out of range in 'shape'");
      }
      ++position_;
    }
    if (position_ == start) return fail("expected an integer in 'shape'");
    if (text_[start] == '0' && position_ - start > 1) return fail("leading zeros in 'shape'");
    if (position_ < text_.size() && text_[position_] == 'L') ++position_;  // Python 2 long
    *out = value;
    return true;
  }

  std::string_view text_;
  size_t position_ = 0;
  std::string error_;
  tfc_status_code_t code_ = TFC_DATA_LOSS;
};

}  // namespace

StatusOr<HostTensor> parseNpy(const void* bytes, size_t size, const std::string& name) {
  const char* file = name.c_str();
  if (bytes == nullptr && size > 0) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: null buffer", file);
  }
  const auto* base = static_cast<const uint8_t*>(bytes);
  if (size < kMagicSize || std::memcmp(base, kMagic, kMagicSize) != 0) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: not a .npy file (bad magic: it must start with \\x93NUMPY)", file);
  }
  if (size < kMagicSize + 2) {
    return Status::error(TFC_DATA_LOSS, "%s: truncated before the format version", file);
  }
  unsigned major = base[6], minor = base[7];
  if (major < 1 || major > 3 || minor != 0) {
    return Status::error(TFC_UNIMPLEMENTED,
                         "%s: unsupported .npy format version %u.%u (supported: 1.0, 2.0, 3.0)",
                         file, major, minor);
  }
  size_t lengthBytes = major == 1 ? 2 : 4;
  size_t prefix = kMagicSize + 2 + lengthBytes;
  if (size < prefix) {
    return Status::error(TFC_DATA_LOSS, "%s: truncated before the header length", file);
  }
  uint64_t headerSize = 0;
  for (size_t i = 0; i < lengthBytes; ++i) {
    headerSize |= static_cast<uint64_t>(base[kMagicSize + 2 + i]) << (8 * i);
  }
  if (headerSize > kNpyMaxHeaderBytes) {
    return Status::error(TFC_DATA_LOSS, "%s: header length %llu exceeds the limit of %zu bytes",
                         file, static_cast<unsigned long long>(headerSize), kNpyMaxHeaderBytes);
  }
  if (headerSize > size - prefix) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: header length %llu exceeds the %zu bytes after it (truncated file?)",
                         file, static_cast<unsigned long long>(headerSize), size - prefix);
  }

  NpyHeader header;
  NpyHeaderParser parser(
      std::string_view(reinterpret_cast<const char*>(base + prefix), headerSize));
  if (!parser.parse(&header)) {
    return Status::error(parser.code(), "%s: %s", file, parser.error().c_str());
  }
  if (header.fortranOrder) {
    return Status::error(TFC_UNIMPLEMENTED,
                         "%s: fortran_order is True (column-major data), which is not supported; "
                         "save a C-order array instead (np.ascontiguousarray)",
                         file);
  }
  uint64_t needed = 0;
  if (!computeByteSize(header.dtype, header.shape, &needed)) {
    return Status::error(TFC_DATA_LOSS, "%s: dtype %s and shape %s have a byte size that overflows 64 bits",
                         file, tfc_dtype_name(header.dtype), formatShape(header.shape).c_str());
  }
  size_t dataSize = size - prefix - static_cast<size_t>(headerSize);
  if (dataSize != needed) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: %s: dtype %s and shape %s need %llu bytes of data but the file "
                         "has %zu",
                         file, dataSize < needed ? "truncated data" : "trailing bytes after the data",
                         tfc_dtype_name(header.dtype), formatShape(header.shape).c_str(),
                         static_cast<unsigned long long>(needed), dataSize);
  }
  TensorView view{header.dtype, std::move(header.shape), base + prefix + headerSize, dataSize};
  StatusOr<HostTensor> tensor = HostTensor::copyFrom(view);
  if (!tensor.ok()) {
    return Status::error(tensor.status().code(), "%s: %s", file, tensor.status().message());
  }
  return tensor;
}

StatusOr<HostTensor> readNpy(const std::string& path) {
  // The data is copied into aligned storage anyway, so mapping gains little; it still
  // avoids a second buffer for the file.
  TFC_ASSIGN_OR_RETURN(internal::FileContents contents,
                       internal::readFile(path, internal::FileMapping::kReadOnly));
  return parseNpy(contents.data, contents.size, path);
}

Status writeNpy(const std::string& path, const TensorView& tensor) {
  const char* file = path.c_str();
  if (tensor.dtype == TFC_DTYPE_BF16) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: .npy cannot store BF16 (NumPy has no bfloat16 type); convert to F32 "
                         "or write safetensors",
                         file);
  }
  const char* descr = tfc_dtype_npy_descr(tensor.dtype);
  if (descr == nullptr) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: cannot write a tensor of invalid dtype %d",
                         file, static_cast<int>(tensor.dtype));
  }
  if (tensor.shape.size() > kMaxRank) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: rank %zu is above the limit of %zu", file,
                         tensor.shape.size(), kMaxRank);
  }
  uint64_t bytes = 0;
  if (!computeByteSize(tensor.dtype, tensor.shape, &bytes) || bytes != tensor.byteSize) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: tensor has %zu bytes, which does not match dtype %s and shape %s",
                         file, tensor.byteSize, tfc_dtype_name(tensor.dtype),
                         formatShape(tensor.shape).c_str());
  }
  if (tensor.byteSize > 0 && tensor.data == nullptr) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: tensor has a null data pointer", file);
  }

  // NumPy's own spelling: "(3,)" for one dimension, "()" for a scalar.
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape.size(); ++i) {
    if (i > 0) shape += ", ";
    shape += std::to_string(tensor.shape[i]);
  }
  if (tensor.shape.size() == 1) shape += ',';
  shape += ')';
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " +
                     shape + ", }";

  // Version 1.0 stores the header length in 2 bytes; longer headers need 2.0.
  size_t prefix = kMagicSize + 2 + 2;
  uint8_t major = 1;
  size_t padded = (prefix + dict.size() + 1 + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  if (padded - prefix > 0xFFFF) {
    prefix = kMagicSize + 2 + 4;
    major = 2;
    padded = (prefix + dict.size() + 1 + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  }
  std::string header(kMagic, kMagicSize);
  header += static_cast<char>(major);
  header += '\0';
  size_t headerSize = padded - prefix;
  for (size_t i = 0; i < prefix - kMagicSize - 2; ++i) {
    header += static_cast<char>((headerSize >> (8 * i)) & 0xFF);
  }
  header += dict;
  header.append(padded - header.size() - 1, ' ');
  header += '\n';

  return internal::writeFileAtomically(
      path, {{header.data(), header.size()}, {tensor.data, tensor.byteSize}});
}

}  // namespace tfc
