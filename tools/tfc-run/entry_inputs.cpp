// Inputs of an entry from the command line (entry_inputs.hpp).
#include "entry_inputs.hpp"

#include <sys/stat.h>

#include <optional>

#include "tfc/runtime/metadata.hpp"
#include "tfc/runtime/npy.hpp"

namespace tfc::run {
namespace {

// An inline 0-d value such as "5" or "0.8", typed by the input's dtype.
StatusOr<HostTensor> parseInlineScalar(const std::string& text, const tfc_tensor_desc_t& desc,
                                       const std::string& subject) {
  auto dtype = static_cast<tfc_dtype_t>(desc.dtype);
  auto tensor = HostTensor::allocate(dtype, {});
  if (!tensor.ok()) return tensor;
  if (dtype == TFC_DTYPE_I32 || dtype == TFC_DTYPE_I64) {
    int64_t value = 0;
    if (!parseInt64(text, &value)) {
      return Status::error(TFC_INVALID_ARGUMENT, "%s is %s; '%s' is not an integer",
                           subject.c_str(), tfc_dtype_name(dtype), text.c_str());
    }
    if (dtype == TFC_DTYPE_I32) {
      if (value < INT32_MIN || value > INT32_MAX) {
        return Status::error(TFC_INVALID_ARGUMENT, "%s is I32; %s is out of range",
                             subject.c_str(), text.c_str());
      }
      *tensor->mutableDataAs<int32_t>() = static_cast<int32_t>(value);
    } else {
      *tensor->mutableDataAs<int64_t>() = value;
    }
    return tensor;
  }
  double value = 0;
  if (!parseDouble(text, &value)) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s is %s; '%s' is not a finite number",
                         subject.c_str(), tfc_dtype_name(dtype), text.c_str());
  }
  switch (dtype) {
    case TFC_DTYPE_F32: *tensor->mutableDataAs<float>() = static_cast<float>(value); break;
    case TFC_DTYPE_F16: *tensor->mutableDataAs<uint16_t>() = tfc_f32_to_f16(static_cast<float>(value)); break;
    case TFC_DTYPE_BF16: *tensor->mutableDataAs<uint16_t>() = tfc_f32_to_bf16(static_cast<float>(value)); break;
    default:
      return Status::error(TFC_INVALID_ARGUMENT, "%s has dtype %s, which cannot be given inline",
                           subject.c_str(), tfc_dtype_name(dtype));
  }
  return tensor;
}

bool isFile(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

}  // namespace

int64_t tokensPerCall(const tfc_entry_t& entry) {
  for (int32_t i = 0; i < entry.num_inputs; ++i) {
    std::string input = entry.inputs[i].name;
    if ((input == "tokens" || input == "token") && entry.inputs[i].rank == 2) {
      return entry.inputs[i].shape[1];
    }
  }
  return 1;
}

std::vector<std::string> EntryInputs::missing(const tfc_entry_t& entry) const {
  std::vector<std::string> names;
  for (int32_t i = 0; i < entry.num_inputs; ++i) {
    if (!given[static_cast<size_t>(i)]) {
      names.push_back(std::string(entry.inputs[i].name) + " (" +
                      tfc_dtype_name(static_cast<tfc_dtype_t>(entry.inputs[i].dtype)) + " " +
                      formatShape(shapeOf(entry.inputs[i])) + ")");
    }
  }
  return names;
}

std::optional<EntryInputs> readEntryInputs(const Command* command, const Args& args,
                                           const tfc_entry_t& entry, int* exitCode) {
  const std::string entryText = "entry '" + std::string(entry.name) + "'";
  auto usage = [&](const std::string& message) {
    *exitCode = usageError(command, message);
    return std::nullopt;
  };
  auto failure = [&](const std::string& message) {
    *exitCode = fail(message);
    return std::nullopt;
  };
  std::vector<std::string> inputNames;
  for (int32_t i = 0; i < entry.num_inputs; ++i) inputNames.push_back(entry.inputs[i].name);
  EntryInputs result;
  result.tensors.resize(static_cast<size_t>(entry.num_inputs));
  result.given.assign(static_cast<size_t>(entry.num_inputs), false);
  for (const std::string& spec : args.all("--in")) {
    size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0) {
      return usage("--in '" + spec + "' is not NAME=FILE.npy or NAME=VALUE");
    }
    std::string name = spec.substr(0, equals), value = spec.substr(equals + 1);
    int32_t index = -1;
    for (int32_t i = 0; i < entry.num_inputs; ++i) {
      if (name == entry.inputs[i].name) index = i;
    }
    if (index < 0) {
      std::string suggestion = closest(name, inputNames);
      return failure(entryText + " has no input '" + name + "' (inputs: " +
                     (inputNames.empty() ? "none" : join(inputNames)) + ")" +
                     (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"));
    }
    auto slot = static_cast<size_t>(index);
    if (result.given[slot]) return failure("input '" + name + "' given twice");
    result.given[slot] = true;
    const tfc_tensor_desc_t& desc = entry.inputs[index];
    std::string subject = entryText + " input '" + name + "'";
    std::vector<int64_t> expectedShape = shapeOf(desc);
    auto expectedDtype = static_cast<tfc_dtype_t>(desc.dtype);
    if (desc.rank == 0 && !isFile(value)) {
      auto scalar = parseInlineScalar(value, desc, subject);
      if (!scalar.ok()) return failure(scalar.status().message());
      result.tensors[slot] = std::move(scalar).value();
      continue;
    }
    if (!isFile(value) && desc.rank > 0) {
      double unused = 0;
      if (parseDouble(value, &unused)) {
        return failure(subject + " has shape " + formatShape(expectedShape) +
                       "; give it as a .npy file (inline values are for 0-d inputs only)");
      }
    }
    auto tensor = readNpy(value);
    if (!tensor.ok()) return failure(tensor.status().message());
    if (tensor->dtype() != expectedDtype) {
      return failure(value + ": " + subject + " has dtype " + tfc_dtype_name(tensor->dtype()) +
                     ", expected " + tfc_dtype_name(expectedDtype));
    }
    if (tensor->shape() != expectedShape) {
      return failure(value + ": " + subject + " has shape " + formatShape(tensor->shape()) +
                     ", expected " + formatShape(expectedShape));
    }
    result.tensors[slot] = std::move(tensor).value();
  }
  return result;
}

}  // namespace tfc::run
