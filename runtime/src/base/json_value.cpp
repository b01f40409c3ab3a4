#include "base/json_value.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>

#include "base/json_reader.hpp"

namespace tfc::internal {
namespace {

bool readValue(JsonReader& reader, JsonValue* out) {
  char c = reader.peek();
  out->offset = reader.offset();
  switch (c) {
    case '{':
      out->kind = JsonValue::kObject;
      return reader.readObject([&](std::string key) {
        out->members.emplace_back(std::move(key), JsonValue());
        return readValue(reader, &out->members.back().second);
      });
    case '[':
      out->kind = JsonValue::kArray;
      return reader.readArray([&] {
        out->items.emplace_back();
        return readValue(reader, &out->items.back());
      });
    case '"':
      out->kind = JsonValue::kString;
      return reader.readString(&out->text);
    case 't':
    case 'f':
    case 'n': {
      std::string_view literal;
      if (!reader.readLiteral(&literal)) return false;
      out->kind = literal == "null" ? JsonValue::kNull : JsonValue::kBool;
      out->boolean = literal == "true";
      return true;
    }
    default: {
      std::string_view number;
      if (!reader.readNumber(&number)) return false;
      out->kind = JsonValue::kNumber;
      out->text = std::string(number);
      return true;
    }
  }
}

}  // namespace

const JsonValue* JsonValue::get(std::string_view key) const {
  if (kind != kObject) return nullptr;
  for (auto it = members.rbegin(); it != members.rend(); ++it) {
    if (it->first == key) return &it->second;
  }
  return nullptr;
}

std::optional<int64_t> JsonValue::asInt() const {
  if (kind != kNumber || text.find_first_of(".eE") != std::string::npos) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return std::nullopt;
  return static_cast<int64_t>(value);
}

const char* JsonValue::kindName(Kind kind) {
  switch (kind) {
    case kNull:
      return "null";
    case kBool:
      return "a boolean";
    case kNumber:
      return "a number";
    case kString:
      return "a string";
    case kArray:
      return "an array";
    case kObject:
      return "an object";
  }
  return "?";
}

bool parseJson(std::string_view text, JsonValue* out, std::string* error, size_t* errorOffset) {
  JsonReader reader(text);
  bool ok = readValue(reader, out);
  if (ok && !reader.atEnd()) ok = reader.fail("unexpected data after the top-level value");
  if (!ok) {
    *errorOffset = reader.offset();
    // The reader's message starts with "at byte N: ", which the caller's line:column says.
    std::string message = reader.error();
    size_t colon = message.rfind("at byte ", 0) == 0 ? message.find(": ") : std::string::npos;
    *error = colon == std::string::npos ? message : message.substr(colon + 2);
  }
  return ok;
}

std::string lineColumn(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
  size_t lineStart = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  lineStart = (lineStart == std::string_view::npos || offset == 0) ? 0 : lineStart + 1;
  if (offset > 0 && text[offset - 1] == '\n') lineStart = offset;
  return std::to_string(line) + ":" + std::to_string(offset - lineStart + 1);
}

}  // namespace tfc::internal
