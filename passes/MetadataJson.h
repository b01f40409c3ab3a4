//===- MetadataJson.h - keys added to the module's tfc.metadata JSON ------===//
//
// The module's tfc.metadata is a JSON object's text that the artifact carries
// (runtime/include/tfc/artifact_abi.h names the keys the runtime reads).
// Passes that record a decision there add one key at the front of it.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_PASSES_METADATAJSON_H
#define TFC_PASSES_METADATAJSON_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace tfc {

/// `json` (an object's text, or "") with "key": valueJson as its first key.
inline std::string withMetadataKey(llvm::StringRef json, llvm::StringRef key,
                                   llvm::StringRef valueJson) {
  std::string entry = "\"" + key.str() + "\": " + valueJson.str();
  llvm::StringRef body = json.trim();
  if (!body.consume_front("{"))
    return "{" + entry + "}";
  body = body.ltrim();
  if (body.starts_with("}"))
    return "{" + entry + "}";
  return "{" + entry + ", " + body.str();
}

} // namespace tfc

#endif // TFC_PASSES_METADATAJSON_H
