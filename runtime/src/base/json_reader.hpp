// Internal: a small, strict, pull-style JSON reader (RFC 8259) for file headers whose shape
// is known in advance. The caller walks the document it expects (objects, arrays, strings,
// integers) instead of building a tree, so a hostile header cannot make the reader allocate
// more than the values the caller keeps.
//
// Errors are sticky: the first one is kept with its byte offset, and every later call
// returns false.
#ifndef TFC_RUNTIME_SRC_JSON_READER_HPP_
#define TFC_RUNTIME_SRC_JSON_READER_HPP_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace tfc::internal {

class JsonReader {
 public:
  // Nesting deeper than this is refused, bounding the callers' recursion.
  static constexpr int kMaxDepth = 64;

  explicit JsonReader(std::string_view text) : text_(text) {}

  bool failed() const { return failed_; }
  // "at byte 17: expected ':' after an object key"; empty when nothing failed.
  const std::string& error() const { return error_; }
  size_t offset() const { return position_; }

  // Records an error at the current offset (only the first one is kept); returns false.
  bool fail(const std::string& message);
  // Records an error that is about the document's meaning rather than its syntax; the
  // message is kept as is, without a byte offset.
  bool failSchema(const std::string& message);
  bool schemaError() const { return schemaError_; }
  // A schema error about the value at the current offset: "header byte 23: <message>".
  bool failValue(const std::string& message);

  // The next significant character after whitespace, or '\0' at the end.
  char peek();
  // True if only whitespace remains.
  bool atEnd();

  // Reads an object: calls |onMember| with each key, positioned at its value, which the
  // callback must consume. Returns false on a syntax error or when the callback does.
  bool readObject(const std::function<bool(std::string key)>& onMember);
  // Reads an array, calling |onElement| positioned at each element.
  bool readArray(const std::function<bool()>& onElement);
  // Reads a string, decoding escapes into UTF-8.
  bool readString(std::string* out);
  // Reads an integral number (no fraction, no exponent) that fits in int64_t/uint64_t.
  bool readInt64(int64_t* out);
  bool readUint64(uint64_t* out);
  // Reads any value (object, array, string, number, true, false, null) and drops it, for
  // members whose content does not matter; nesting is bounded as everywhere.
  bool skipValue();
  // Reads any JSON number, fraction and exponent included, as its text.
  bool readNumber(std::string_view* out);
  // Reads true, false or null, as its text.
  bool readLiteral(std::string_view* out);

 private:
  void skipWhitespace();
  // Scans a number of any form (fraction and exponent allowed) into |out|; the integer
  // part's length (sign included) goes to |integerLength|.
  bool scanNumber(std::string_view* out, size_t* integerLength);
  bool readNumberText(std::string_view* out);
  bool readHex4(uint32_t* out);
  bool enter();
  void leave() { --depth_; }

  std::string_view text_;
  size_t position_ = 0;
  int depth_ = 0;
  bool failed_ = false;
  bool schemaError_ = false;
  std::string error_;
};

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_JSON_READER_HPP_
