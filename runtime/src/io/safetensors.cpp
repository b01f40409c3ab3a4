#include "tfc/runtime/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "base/file_util.hpp"
#include "base/json_reader.hpp"

namespace tfc {
namespace {

using internal::JsonReader;
using internal::quoteForMessage;

uint64_t readLittleEndian64(const uint8_t* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

std::string formatOffsets(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// Lists the accepted dtype names, for the unknown-dtype message.
std::string supportedDtypeNames() {
  std::string names;
  for (int i = 1; i < TFC_DTYPE_COUNT; ++i) {
    if (!names.empty()) names += ' ';
    names += tfc_dtype_name(static_cast<tfc_dtype_t>(i));
  }
  return names;
}

// Parses the JSON header into |tensors| and |metadata|, checking each tensor against the
// data section of |dataSize| bytes. On failure returns false with the reader holding the
// error and |*code| its status code.
class HeaderParser {
 public:
  HeaderParser(std::string_view header, uint64_t dataSize)
      : reader_(header), dataSize_(dataSize) {}

  bool parse(std::vector<SafetensorsTensorInfo>* tensors,
             std::map<std::string, std::string>* metadata) {
    tensors_ = tensors;
    metadata_ = metadata;
    if (reader_.peek() != '{') {
      return reader_.failSchema("header is not a JSON object (it must start with '{')");
    }
    if (!reader_.readObject([this](std::string key) { return parseMember(std::move(key)); })) {
      return false;
    }
    if (!reader_.atEnd()) {
      return reader_.failSchema("trailing data after the JSON header object at header byte " +
                                std::to_string(reader_.offset()) +
                                " (only whitespace may follow it)");
    }
    return true;
  }

  // The message, prefixed as a syntax error where it is one.
  std::string error() const {
    return reader_.schemaError() ? reader_.error() : "invalid JSON in header " + reader_.error();
  }
  tfc_status_code_t code() const { return code_; }

 private:
  bool parseMember(std::string key) {
    if (key == "__metadata__") return parseMetadata();
    if (key.empty()) return reader_.failSchema("a tensor has an empty name");
    SafetensorsTensorInfo info;
    info.name = std::move(key);
    if (!parseTensor(&info)) return false;
    tensors_->push_back(std::move(info));
    return true;
  }

  bool parseMetadata() {
    if (sawMetadata_) return reader_.failSchema("'__metadata__' appears twice");
    sawMetadata_ = true;
    if (reader_.peek() != '{') {
      return reader_.failSchema("'__metadata__' must be an object of strings");
    }
    return reader_.readObject([this](std::string key) {
      if (reader_.peek() != '"') {
        return reader_.failSchema("'__metadata__' value for key " + quoteForMessage(key) +
                                  " must be a string");
      }
      std::string value;
      if (!reader_.readString(&value)) return false;
      if (!metadata_->emplace(key, std::move(value)).second) {
        return reader_.failSchema("duplicate '__metadata__' key " + quoteForMessage(key));
      }
      return true;
    });
  }

  bool parseTensor(SafetensorsTensorInfo* info) {
    const std::string tensor = "tensor " + quoteForMessage(info->name);
    if (reader_.peek() != '{') {
      return reader_.failSchema(tensor +
                                " must be an object with 'dtype', 'shape' and 'data_offsets'");
    }
    bool sawDtype = false, sawShape = false, sawOffsets = false;
    bool ok = reader_.readObject([&](std::string field) {
      if (field == "dtype") {
        if (sawDtype) return reader_.failSchema(tensor + " has duplicate key 'dtype'");
        sawDtype = true;
        return parseDtype(tensor, info);
      }
      if (field == "shape") {
        if (sawShape) return reader_.failSchema(tensor + " has duplicate key 'shape'");
        sawShape = true;
        return parseShape(tensor, info);
      }
      if (field == "data_offsets") {
        if (sawOffsets) return reader_.failSchema(tensor + " has duplicate key 'data_offsets'");
        sawOffsets = true;
        return parseOffsets(tensor, info);
      }
      return reader_.failSchema(tensor + " has unknown key " + quoteForMessage(field));
    });
    if (!ok) return false;
    if (!sawDtype) return reader_.failSchema(tensor + " is missing 'dtype'");
    if (!sawShape) return reader_.failSchema(tensor + " is missing 'shape'");
    if (!sawOffsets) return reader_.failSchema(tensor + " is missing 'data_offsets'");
    return checkSize(tensor, info);
  }

  bool parseDtype(const std::string& tensor, SafetensorsTensorInfo* info) {
    if (reader_.peek() != '"') return reader_.failSchema(tensor + " has a non-string dtype");
    std::string name;
    if (!reader_.readString(&name)) return false;
    if (!tfc_dtype_from_name(name.data(), name.size(), &info->dtype)) {
      code_ = TFC_UNIMPLEMENTED;
      return reader_.failSchema(tensor + " has unsupported dtype " + quoteForMessage(name) +
                                " (supported: " + supportedDtypeNames() + ")");
    }
    return true;
  }

  bool parseShape(const std::string& tensor, SafetensorsTensorInfo* info) {
    if (reader_.peek() != '[') {
      return reader_.failSchema(tensor + " has a shape that is not an array of integers");
    }
    return reader_.readArray([&] {
      if (info->shape.size() == kMaxRank) {
        return reader_.failSchema(tensor + " has more than " + std::to_string(kMaxRank) +
                                  " dimensions");
      }
      int64_t dim = 0;
      if (!reader_.readInt64(&dim)) return false;
      if (dim < 0) {
        return reader_.failSchema(tensor + " has negative dimension " + std::to_string(dim) +
                                  " in its shape");
      }
      info->shape.push_back(dim);
      return true;
    });
  }

  bool parseOffsets(const std::string& tensor, SafetensorsTensorInfo* info) {
    if (reader_.peek() != '[') {
      return reader_.failSchema(tensor + " has data_offsets that are not an array [begin, end]");
    }
    uint64_t offsets[2] = {0, 0};
    size_t count = 0;
    bool ok = reader_.readArray([&] {
      if (count == 2) {
        return reader_.failSchema(tensor + " has more than two data_offsets");
      }
      return reader_.readUint64(&offsets[count++]);
    });
    if (!ok) return false;
    if (count != 2) return reader_.failSchema(tensor + " has fewer than two data_offsets");
    info->dataBegin = offsets[0];
    info->dataEnd = offsets[1];
    return true;
  }

  bool checkSize(const std::string& tensor, SafetensorsTensorInfo* info) {
    const std::string offsets = formatOffsets(info->dataBegin, info->dataEnd);
    if (info->dataBegin > info->dataEnd) {
      return reader_.failSchema(tensor + " has data_offsets " + offsets +
                                " whose begin is after its end");
    }
    if (info->dataEnd > dataSize_) {
      return reader_.failSchema(tensor + " has data_offsets " + offsets +
                                " out of range: the data section has only " +
                                std::to_string(dataSize_) + " bytes");
    }
    uint64_t needed = 0;
    if (!computeByteSize(info->dtype, info->shape, &needed)) {
      return reader_.failSchema(tensor + " has dtype " + tfc_dtype_name(info->dtype) +
                                " and shape " + formatShape(info->shape) +
                                " whose byte size overflows 64 bits");
    }
    if (needed != info->dataEnd - info->dataBegin) {
      return reader_.failSchema(tensor + " has data_offsets " + offsets + " but dtype " +
                                tfc_dtype_name(info->dtype) + " and shape " +
                                formatShape(info->shape) + " need " + std::to_string(needed) +
                                " bytes");
    }
    info->byteSize = static_cast<size_t>(needed);  // fits: it is within the data section
    return true;
  }

  JsonReader reader_;
  uint64_t dataSize_;
  tfc_status_code_t code_ = TFC_DATA_LOSS;
  bool sawMetadata_ = false;
  std::vector<SafetensorsTensorInfo>* tensors_ = nullptr;
  std::map<std::string, std::string>* metadata_ = nullptr;
};

// Escapes |text| as the body of a JSON string.
void appendJsonString(std::string_view text, std::string* out) {
  *out += '"';
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += ch;
    } else if (c < 0x20) {
      fmt::format_to(std::back_inserter(*out), FMT_STRING("\\u{:04x}"), c);
    } else {
      *out += ch;
    }
  }
  *out += '"';
}

}  // namespace

StatusOr<SafetensorsFile> SafetensorsFile::parse(const void* bytes, size_t size,
                                                 std::string name) {
  const char* file = name.c_str();
  if (bytes == nullptr && size > 0) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: null buffer", file);
  }
  const auto* base = static_cast<const uint8_t*>(bytes);
  if (size < 8) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: file is %zu bytes, too short for the 8-byte header length "
                         "(truncated or not a safetensors file)",
                         file, size);
  }
  uint64_t headerSize = readLittleEndian64(base);
  if (headerSize > kSafetensorsMaxHeaderBytes) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: header length %llu exceeds the limit of %llu bytes "
                         "(corrupt or not a safetensors file)",
                         file, static_cast<unsigned long long>(headerSize),
                         static_cast<unsigned long long>(kSafetensorsMaxHeaderBytes));
  }
  if (headerSize > size - 8) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: header length %llu exceeds the %zu bytes after the length "
                         "(truncated file?)",
                         file, static_cast<unsigned long long>(headerSize), size - 8);
  }
  std::string_view header(reinterpret_cast<const char*>(base + 8), headerSize);
  const uint8_t* data = base + 8 + headerSize;
  uint64_t dataSize = size - 8 - headerSize;

  SafetensorsFile result;
  result.path_ = std::move(name);
  file = result.path_.c_str();
  HeaderParser parser(header, dataSize);
  if (!parser.parse(&result.tensors_, &result.metadata_)) {
    return Status::error(parser.code(), "%s: %s", file, parser.error().c_str());
  }

  std::sort(result.tensors_.begin(), result.tensors_.end(),
            [](const SafetensorsTensorInfo& a, const SafetensorsTensorInfo& b) {
              return a.name < b.name;
            });
  for (size_t i = 1; i < result.tensors_.size(); ++i) {
    if (result.tensors_[i].name == result.tensors_[i - 1].name) {
      return Status::error(TFC_DATA_LOSS, "%s: duplicate tensor name %s", file,
                           quoteForMessage(result.tensors_[i].name).c_str());
    }
  }

  // Overlap check: sorted by begin, any overlap shows up between neighbours. Empty tensors
  // occupy no bytes and may sit anywhere.
  std::vector<const SafetensorsTensorInfo*> byOffset;
  byOffset.reserve(result.tensors_.size());
  for (const SafetensorsTensorInfo& info : result.tensors_) {
    if (info.byteSize > 0) byOffset.push_back(&info);
  }
  std::sort(byOffset.begin(), byOffset.end(),
            [](const SafetensorsTensorInfo* a, const SafetensorsTensorInfo* b) {
              return a->dataBegin != b->dataBegin ? a->dataBegin < b->dataBegin
                                                  : a->dataEnd < b->dataEnd;
            });
  for (size_t i = 1; i < byOffset.size(); ++i) {
    const SafetensorsTensorInfo* previous = byOffset[i - 1];
    const SafetensorsTensorInfo* current = byOffset[i];
    if (current->dataBegin < previous->dataEnd) {
      return Status::error(TFC_DATA_LOSS,
                           "%s: tensors %s (data_offsets %s) and %s (data_offsets %s) overlap",
                           file, quoteForMessage(previous->name).c_str(),
                           formatOffsets(previous->dataBegin, previous->dataEnd).c_str(),
                           quoteForMessage(current->name).c_str(),
                           formatOffsets(current->dataBegin, current->dataEnd).c_str());
    }
  }

  // As the format's reference implementation does, the data section must end exactly at
  // the end of the file: bytes nobody describes are a sign of a truncated header, a file
  // concatenated with another, or a writer bug, and would silently be ignored otherwise.
  uint64_t dataUsed = 0;
  for (const SafetensorsTensorInfo& info : result.tensors_) dataUsed = std::max(dataUsed, info.dataEnd);
  if (dataUsed != dataSize) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: %llu bytes of data after the header but the tensors use %llu; "
                         "the file has %llu trailing bytes that no tensor describes (file "
                         "size %zu, expected %llu)",
                         file, static_cast<unsigned long long>(dataSize),
                         static_cast<unsigned long long>(dataUsed),
                         static_cast<unsigned long long>(dataSize - dataUsed), size,
                         static_cast<unsigned long long>(8 + headerSize + dataUsed));
  }

  for (SafetensorsTensorInfo& info : result.tensors_) {
    info.fileOffset = 8 + headerSize + info.dataBegin;
    info.data = data + info.dataBegin;
  }
  return result;
}

StatusOr<SafetensorsFile> SafetensorsFile::open(const std::string& path,
                                                const SafetensorsOpenOptions& options) {
  const internal::FileMapping mapping =
      options.allowMmap ? internal::FileMapping::kReadOnly : internal::FileMapping::kNone;
  TFC_ASSIGN_OR_RETURN(internal::FileContents contents, internal::readFile(path, mapping));
  TFC_ASSIGN_OR_RETURN(SafetensorsFile file, parse(contents.data, contents.size, path));
  file.owner_ = std::move(contents.owner);
  file.mapped_ = contents.mapped;
  return file;
}

const SafetensorsTensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const SafetensorsTensorInfo& info, std::string_view key) {
                               return info.name < key;
                             });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

StatusOr<TensorView> SafetensorsFile::get(std::string_view name) const {
  const SafetensorsTensorInfo* info = find(name);
  if (info == nullptr) {
    return Status::error(TFC_NOT_FOUND, "%s: no tensor named %s", path_.c_str(),
                         internal::quoteForMessage(name).c_str());
  }
  return info->view();
}

StatusOr<HostTensor> SafetensorsFile::load(std::string_view name) const {
  TFC_ASSIGN_OR_RETURN(TensorView view, get(name));
  return HostTensor::copyFrom(view);
}

Status writeSafetensors(const std::string& path, const std::vector<NamedTensorView>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  const char* file = path.c_str();
  // Validate everything before touching the file system.
  std::vector<const NamedTensorView*> byName;
  byName.reserve(tensors.size());
  for (const NamedTensorView& named : tensors) {
    const std::string tensor = "tensor " + quoteForMessage(named.name);
    if (named.name.empty()) {
      return Status::error(TFC_INVALID_ARGUMENT, "%s: cannot write a tensor with an empty name",
                           file);
    }
    if (named.name == "__metadata__") {
      return Status::error(TFC_INVALID_ARGUMENT,
                           "%s: '__metadata__' is reserved and cannot name a tensor", file);
    }
    if (!internal::isValidUtf8(named.name)) {
      return Status::error(TFC_INVALID_ARGUMENT, "%s: %s: name is not valid UTF-8", file,
                           tensor.c_str());
    }
    const TensorView& view = named.tensor;
    if (!tfc_dtype_is_valid(view.dtype)) {
      return Status::error(TFC_INVALID_ARGUMENT, "%s: %s has an invalid dtype (%d)", file,
                           tensor.c_str(), static_cast<int>(view.dtype));
    }
    if (view.shape.size() > kMaxRank) {
      return Status::error(TFC_INVALID_ARGUMENT, "%s: %s has rank %zu, above the limit of %zu",
                           file, tensor.c_str(), view.shape.size(), kMaxRank);
    }
    uint64_t bytes = 0;
    if (!computeByteSize(view.dtype, view.shape, &bytes) || bytes != view.byteSize) {
      return Status::error(TFC_INVALID_ARGUMENT,
                           "%s: %s has %zu bytes, which does not match dtype %s and shape %s",
                           file, tensor.c_str(), view.byteSize, tfc_dtype_name(view.dtype),
                           formatShape(view.shape).c_str());
    }
    if (view.byteSize > 0 && view.data == nullptr) {
      return Status::error(TFC_INVALID_ARGUMENT, "%s: %s has a null data pointer", file,
                           tensor.c_str());
    }
    byName.push_back(&named);
  }
  std::sort(byName.begin(), byName.end(), [](const NamedTensorView* a, const NamedTensorView* b) {
    return a->name < b->name;
  });
  for (size_t i = 1; i < byName.size(); ++i) {
    if (byName[i]->name == byName[i - 1]->name) {
      return Status::error(TFC_INVALID_ARGUMENT, "%s: duplicate tensor name %s", file,
                           quoteForMessage(byName[i]->name).c_str());
    }
  }
  for (const auto& [key, value] : metadata) {
    if (!internal::isValidUtf8(key) || !internal::isValidUtf8(value)) {
      return Status::error(TFC_INVALID_ARGUMENT, "%s: metadata entry %s is not valid UTF-8",
                           file, quoteForMessage(key).c_str());
    }
  }

  // Lay the data out without gaps (the reference reader refuses them): first the tensors
  // whose size is a multiple of kSafetensorsWriteAlignment, so that each of them starts at
  // such a multiple too and a reader can map it in place; then the others by decreasing
  // element size, so that each tensor starts at a multiple of its element size.
  auto fillsWholeLines = [](const NamedTensorView* named) {
    return named->tensor.byteSize % kSafetensorsWriteAlignment == 0;
  };
  std::vector<const NamedTensorView*> byLayout = byName;
  std::stable_sort(byLayout.begin(), byLayout.end(),
                   [&](const NamedTensorView* a, const NamedTensorView* b) {
                     if (fillsWholeLines(a) != fillsWholeLines(b)) return fillsWholeLines(a);
                     return tfc_dtype_size(a->tensor.dtype) > tfc_dtype_size(b->tensor.dtype);
                   });
  std::map<const NamedTensorView*, uint64_t> begins;
  uint64_t offset = 0;
  for (const NamedTensorView* named : byLayout) {
    begins[named] = offset;
    offset += named->tensor.byteSize;  // cannot overflow: the views exist in memory
  }

  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      if (!first) header += ',';
      first = false;
      appendJsonString(key, &header);
      header += ':';
      appendJsonString(value, &header);
    }
    header += '}';
    if (!byName.empty()) header += ',';
  }
  for (size_t i = 0; i < byName.size(); ++i) {
    const NamedTensorView* named = byName[i];
    if (i > 0) header += ',';
    appendJsonString(named->name, &header);
    header += ":{\"dtype\":\"";
    header += tfc_dtype_name(named->tensor.dtype);
    header += "\",\"shape\":[";
    for (size_t d = 0; d < named->tensor.shape.size(); ++d) {
      if (d > 0) header += ',';
      header += std::to_string(named->tensor.shape[d]);
    }
    uint64_t begin = begins[named];
    header += "],\"data_offsets\":[" + std::to_string(begin) + "," +
              std::to_string(begin + named->tensor.byteSize) + "]}";
  }
  header += '}';
  // Pad with spaces (JSON whitespace) so that the data section starts at a multiple of
  // kSafetensorsWriteAlignment; Hugging Face pads to 8, which a multiple of 64 also is.
  const size_t dataStart = 8 + header.size();
  header.append((kSafetensorsWriteAlignment - dataStart % kSafetensorsWriteAlignment) %
                    kSafetensorsWriteAlignment,
                ' ');
  if (header.size() > kSafetensorsMaxHeaderBytes) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: header of %zu bytes exceeds the safetensors limit of %llu bytes",
                         file, header.size(),
                         static_cast<unsigned long long>(kSafetensorsMaxHeaderBytes));
  }

  uint8_t lengthPrefix[8];
  uint64_t headerSize = header.size();
  for (int i = 0; i < 8; ++i) lengthPrefix[i] = static_cast<uint8_t>(headerSize >> (8 * i));
  std::vector<internal::ByteSpan> chunks;
  chunks.reserve(2 + byLayout.size());
  chunks.push_back({lengthPrefix, sizeof(lengthPrefix)});
  chunks.push_back({header.data(), header.size()});
  for (const NamedTensorView* named : byLayout) {
    if (named->tensor.byteSize > 0) chunks.push_back({named->tensor.data, named->tensor.byteSize});
  }
  return internal::writeFileAtomically(path, chunks);
}

Status writeSafetensors(const std::string& path, const std::map<std::string, HostTensor>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  std::vector<NamedTensorView> views;
  views.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) views.push_back({name, tensor.view()});
  return writeSafetensors(path, views, metadata);
}

}  // namespace tfc
