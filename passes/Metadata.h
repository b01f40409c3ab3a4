//===- Metadata.h - entries of the module's tfc.metadata JSON -*- C++ -*-===//
//
// The module's tfc.metadata is a JSON object that the artifact carries to
// the runtime (tfc_artifact_t.metadata_json); passes add keys to it.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_PASSES_METADATA_H
#define TFC_PASSES_METADATA_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace tfc {

/// `json` (an object's text, or "") with `"key": value` as its first entry;
/// `value` is JSON text (a number, or a quoted string).
inline std::string withMetadataEntry(llvm::StringRef json, llvm::StringRef key,
                                     llvm::StringRef value) {
  std::string entry = "\"" + key.str() + "\": " + value.str();
  llvm::StringRef body = json.trim();
  if (!body.consume_front("{"))
    return "{" + entry + "}";
  body = body.ltrim();
  if (body.starts_with("}"))
    return "{" + entry + "}";
  return "{" + entry + ", " + body.str();
}

} // namespace tfc

#endif // TFC_PASSES_METADATA_H
