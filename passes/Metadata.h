//===- Metadata.h - entries of the module's tfc.metadata JSON -*- C++ -*-===//
//
// The module's tfc.metadata is a JSON object that the artifact carries to
// the runtime (tfc_artifact_t.metadata_json); passes add keys to it.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_PASSES_METADATA_H
#define TFC_PASSES_METADATA_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <cctype>
#include <optional>
#include <string>
#include <utility>

namespace tfc {

/// The span [begin, end) of `json`'s top-level entry `"key": value`, with the
/// comma that separates it from the next entry (or, when it is the last, from
/// the previous one); nullopt when `json` has no such entry.
inline std::optional<std::pair<size_t, size_t>>
findMetadataEntry(llvm::StringRef json, llvm::StringRef key) {
  const std::string quoted = "\"" + key.str() + "\"";
  int depth = 0;
  size_t previousComma = llvm::StringRef::npos, begin = llvm::StringRef::npos;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (c == '"') {
      if (depth == 1 && begin == llvm::StringRef::npos &&
          json.substr(i).starts_with(quoted) &&
          json.substr(i + quoted.size()).ltrim().starts_with(":"))
        begin = i;
      for (++i; i < json.size() && json[i] != '"'; ++i)
        if (json[i] == '\\')
          ++i;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0 && begin != llvm::StringRef::npos) {
        // The last entry: drop the comma before it instead.
        size_t from = previousComma < begin ? previousComma : begin;
        size_t to = i;
        while (to > begin &&
               std::isspace(static_cast<unsigned char>(json[to - 1])))
          --to;
        return std::make_pair(from, to);
      }
    } else if (c == ',' && depth == 1) {
      if (begin != llvm::StringRef::npos) {
        size_t end = i + 1;
        while (end < json.size() &&
               std::isspace(static_cast<unsigned char>(json[end])))
          ++end;
        return std::make_pair(begin, end);
      }
      previousComma = i;
    }
  }
  return std::nullopt;
}

/// `json` (an object's text, or "") with `"key": value` as its first entry,
/// replacing an entry of that key; `value` is JSON text (a number, or a
/// quoted string).
inline std::string withMetadataEntry(llvm::StringRef json, llvm::StringRef key,
                                     llvm::StringRef value) {
  std::string entry = "\"" + key.str() + "\": " + value.str();
  std::string rest = json.trim().str();
  if (auto span = findMetadataEntry(rest, key))
    rest.erase(span->first, span->second - span->first);
  llvm::StringRef body = rest;
  if (!body.consume_front("{"))
    return "{" + entry + "}";
  body = body.ltrim();
  if (body.starts_with("}"))
    return "{" + entry + "}";
  return "{" + entry + ", " + body.str();
}

/// The integer value of `json`'s top-level `key`, if it has one.
inline std::optional<int64_t> metadataInt(llvm::StringRef json,
                                          llvm::StringRef key) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(json);
  if (!value) {
    llvm::consumeError(value.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *object = value->getAsObject();
  return object ? object->getInteger(key) : std::nullopt;
}

} // namespace tfc

#endif // TFC_PASSES_METADATA_H
