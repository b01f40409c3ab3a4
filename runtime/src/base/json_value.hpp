// Internal: a JSON document as a tree, for files whose shape varies (tokenizer.json: members
// in any order, optional parts, objects tagged by "type"). Built by JsonReader, so it has the
// same strictness and nesting limit; every value keeps its byte offset for messages.
#ifndef TFC_RUNTIME_SRC_JSON_VALUE_HPP_
#define TFC_RUNTIME_SRC_JSON_VALUE_HPP_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfc::internal {

struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = kNull;
  size_t offset = 0;             // of the value's first byte in the document
  bool boolean = false;          // kBool
  std::string text;              // kString: the decoded string; kNumber: the number as written
  std::vector<JsonValue> items;  // kArray
  std::vector<std::pair<std::string, JsonValue>> members;  // kObject, in document order

  // The member |key| of an object (the last one when repeated), or null.
  const JsonValue* get(std::string_view key) const;
  bool isNull() const { return kind == kNull; }
  // The integer a kNumber holds, when it is one that fits.
  std::optional<int64_t> asInt() const;
  // "object", "string", ...: for messages.
  static const char* kindName(Kind kind);
};

// Parses |text| (one value, then only whitespace). On error returns false and sets |error|
// to the message and |errorOffset| to where it happened.
bool parseJson(std::string_view text, JsonValue* out, std::string* error, size_t* errorOffset);

// "LINE:COLUMN" (1-based; the column counts bytes) of byte |offset| in |text|.
std::string lineColumn(std::string_view text, size_t offset);

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_JSON_VALUE_HPP_
