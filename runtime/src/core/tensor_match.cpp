#include "core/tensor_match.hpp"

#include <iterator>
#include <map>
#include <string_view>
#include <unordered_map>

#include "base/file_util.hpp"
#include "base/float_convert.hpp"
#include "core/runtime_internal.hpp"

namespace tfc::internal {
namespace {


std::string dtypeAndShape(const tfc_tensor_desc_t& desc) {
  return std::string(tfc_dtype_name(static_cast<tfc_dtype_t>(desc.dtype))) + " " +
         formatShape(descShape(desc));
}

// The name after a leading "P." (P non-empty, without dots), or "" when there is none.
std::string_view withoutPrefix(std::string_view name) {
  size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == name.size()) return {};
  return name.substr(dot + 1);
}

}  // namespace

StatusOr<TensorMatch> matchTensors(const std::string& where, const std::vector<SourceTensor>& tensors,
                                   const tfc_tensor_desc_t* descs, int32_t count, const char* what,
                                   const MatchRules& rules) {
  const auto descCount = static_cast<size_t>(count);
  std::unordered_map<std::string_view, size_t> byName;
  for (size_t t = 0; t < tensors.size(); ++t) byName.emplace(tensors[t].info->name, t);
  std::vector<bool> used(tensors.size(), false);
  std::vector<const SourceTensor*> bound(descCount, nullptr);
  // Exact names first, for every description, so that a prefixed tensor never takes a
  // description that has its own tensor.
  for (size_t i = 0; i < descCount; ++i) {
    auto found = byName.find(descs[i].name);
    if (found == byName.end()) continue;
    bound[i] = &tensors[found->second];
    used[found->second] = true;
  }
  ProblemList problems;
  if (rules.dropPrefix) {
    std::multimap<std::string_view, size_t> byStripped;
    for (size_t t = 0; t < tensors.size(); ++t) {
      std::string_view stripped = withoutPrefix(tensors[t].info->name);
      if (!used[t] && !stripped.empty()) byStripped.emplace(stripped, t);
    }
    for (size_t i = 0; i < descCount; ++i) {
      auto [begin, end] = byStripped.equal_range(descs[i].name);
      if (bound[i] != nullptr) {
        // "wte.weight" and "transformer.wte.weight" both: which one the user meant is
        // unknowable, so refuse it as two prefixed ones are, not take the exact one silently.
        if (begin == end) continue;
        std::string names = quoteForMessage(bound[i]->info->name);
        for (auto it = begin; it != end; ++it) {
          names += ", " + quoteForMessage(tensors[it->second].info->name);
          used[it->second] = true;
        }
        problems.add(TFC_INVALID_ARGUMENT, std::string(what) + " " +
                                               quoteForMessage(descs[i].name) +
                                               " could be any of the tensors " + names);
        continue;
      }
      if (begin == end) continue;
      if (std::next(begin) != end) {
        std::string names;
        for (auto it = begin; it != end; ++it) {
          names += (it == begin ? "" : ", ") + quoteForMessage(tensors[it->second].info->name);
        }
        problems.add(TFC_INVALID_ARGUMENT, std::string(what) + " " +
                                               quoteForMessage(descs[i].name) +
                                               " could be any of the tensors " + names);
        for (auto it = begin; it != end; ++it) used[it->second] = true;
        continue;
      }
      bound[i] = &tensors[begin->second];
      used[begin->second] = true;
    }
  }

  TensorMatch match;
  match.sources.assign(descCount, nullptr);
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (!used[t]) match.unbound.push_back(&tensors[t]);
  }
  std::vector<std::string_view> unboundNames;
  for (const SourceTensor* tensor : match.unbound) unboundNames.emplace_back(tensor->info->name);
  std::vector<std::string_view> missingNames;
  for (size_t i = 0; i < descCount; ++i) {
    const tfc_tensor_desc_t& desc = descs[i];
    const SourceTensor* source = bound[i];
    if (source == nullptr) {
      missingNames.emplace_back(desc.name);
      if (rules.allowMissing) continue;
      std::string text = "missing " + std::string(what) + " " + quoteForMessage(desc.name) +
                         " (" + dtypeAndShape(desc) + ")";
      // With unexpected tensors allowed, no other problem points at a misnamed tensor.
      std::string closest =
          rules.allowUnexpected ? closestName(desc.name, unboundNames) : std::string();
      if (!closest.empty()) text += "; the checkpoint has " + quoteForMessage(closest);
      problems.add(TFC_NOT_FOUND, std::move(text));
      continue;
    }
    const SafetensorsTensorInfo& info = *source->info;
    std::string subject = "tensor " + quoteForMessage(info.name);
    if (source->file != nullptr) subject += " in " + quoteForMessage(*source->file);
    if (info.name != desc.name) subject += " (" + std::string(what) + " " + quoteForMessage(desc.name) + ")";
    bool good = true;
    const auto expectedDtype = static_cast<tfc_dtype_t>(desc.dtype);
    if (info.dtype != expectedDtype &&
        !(rules.convertFloats && isConvertibleFloat(info.dtype, expectedDtype))) {
      std::string text = subject + " has dtype " + tfc_dtype_name(info.dtype) + ", expected " +
                         tfc_dtype_name(expectedDtype);
      if (rules.convertFloats) text += " (only F32, BF16 and F16 convert to each other)";
      problems.add(TFC_INVALID_ARGUMENT, std::move(text));
      good = false;
    }
    if (info.shape != descShape(desc)) {
      problems.add(TFC_INVALID_ARGUMENT, subject + " has shape " + formatShape(info.shape) +
                                             ", expected " + formatShape(descShape(desc)));
      good = false;
    }
    if (good) match.sources[i] = source;
  }
  if (!rules.allowUnexpected) {
    for (const SourceTensor* tensor : match.unbound) {
      std::string text = "unexpected tensor " + quoteForMessage(tensor->info->name);
      if (tensor->file != nullptr) text += " in " + quoteForMessage(*tensor->file);
      text += " (no " + std::string(what) + " of that name";
      std::string closest = closestName(tensor->info->name, missingNames);
      if (!closest.empty()) text += "; did you mean '" + closest + "'?";
      text += ")";
      problems.add(TFC_INVALID_ARGUMENT, std::move(text));
    }
  }
  if (!problems.empty()) return problems.status(where);
  return match;
}

StatusOr<std::vector<const SafetensorsTensorInfo*>> matchSafetensors(
    const SafetensorsFile& file, const tfc_tensor_desc_t* descs, int32_t count, const char* what,
    bool allowMissing, bool allowUnexpected) {
  std::vector<SourceTensor> tensors;
  tensors.reserve(file.tensors().size());
  for (const SafetensorsTensorInfo& info : file.tensors()) tensors.push_back({&info, nullptr});
  MatchRules rules;
  rules.allowMissing = allowMissing;
  rules.allowUnexpected = allowUnexpected;
  TFC_ASSIGN_OR_RETURN(TensorMatch match,
                       matchTensors(file.path(), tensors, descs, count, what, rules));
  std::vector<const SafetensorsTensorInfo*> sources;
  sources.reserve(match.sources.size());
  for (const SourceTensor* source : match.sources) {
    sources.push_back(source != nullptr ? source->info : nullptr);
  }
  return sources;
}

}  // namespace tfc::internal
