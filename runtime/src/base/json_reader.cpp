#include "base/json_reader.hpp"

#include "base/file_util.hpp"
#include "base/unicode.hpp"

namespace tfc::internal {
namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Length of the UTF-8 sequence starting with |lead|, or 0 if |lead| cannot start one.
size_t utf8SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 0;
}

}  // namespace

bool JsonReader::fail(const std::string& message) {
  if (!failed_) {
    failed_ = true;
    error_ = "at byte " + std::to_string(position_) + ": " + message;
  }
  return false;
}

bool JsonReader::failValue(const std::string& message) {
  return failSchema("header byte " + std::to_string(position_) + ": " + message);
}

bool JsonReader::failSchema(const std::string& message) {
  if (!failed_) {
    failed_ = true;
    schemaError_ = true;
    error_ = message;
  }
  return false;
}

void JsonReader::skipWhitespace() {
  while (position_ < text_.size()) {
    char c = text_[position_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++position_;
  }
}

char JsonReader::peek() {
  skipWhitespace();
  return position_ < text_.size() ? text_[position_] : '\0';
}

bool JsonReader::atEnd() {
  skipWhitespace();
  return position_ == text_.size();
}

bool JsonReader::enter() {
  if (++depth_ > kMaxDepth) {
    return fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  return true;
}

bool JsonReader::readObject(const std::function<bool(std::string key)>& onMember) {
  if (failed_) return false;
  if (peek() != '{') return fail("expected '{'");
  if (!enter()) return false;
  ++position_;
  if (peek() == '}') {
    ++position_;
    leave();
    return true;
  }
  while (true) {
    if (peek() != '"') return fail("expected a string key");
    std::string key;
    if (!readString(&key)) return false;
    if (peek() != ':') return fail("expected ':' after an object key");
    ++position_;
    if (!onMember(std::move(key))) return fail("invalid object member");
    char c = peek();
    if (c == ',') {
      ++position_;
      continue;
    }
    if (c == '}') {
      ++position_;
      leave();
      return true;
    }
    return fail("expected ',' or '}' in an object");
  }
}

bool JsonReader::readArray(const std::function<bool()>& onElement) {
  if (failed_) return false;
  if (peek() != '[') return fail("expected '['");
  if (!enter()) return false;
  ++position_;
  if (peek() == ']') {
    ++position_;
    leave();
    return true;
  }
  while (true) {
    if (!onElement()) return fail("invalid array element");
    char c = peek();
    if (c == ',') {
      ++position_;
      continue;
    }
    if (c == ']') {
      ++position_;
      leave();
      return true;
    }
    return fail("expected ',' or ']' in an array");
  }
}

bool JsonReader::readHex4(uint32_t* out) {
  if (text_.size() - position_ < 4) return fail("truncated \\u escape");
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    char c = text_[position_++];
    value <<= 4;
    if (c >= '0' && c <= '9') value |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') value |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') value |= static_cast<uint32_t>(c - 'A' + 10);
    else return fail("invalid hex digit in a \\u escape");
  }
  *out = value;
  return true;
}

bool JsonReader::readString(std::string* out) {
  if (failed_) return false;
  if (peek() != '"') return fail("expected a string");
  ++position_;
  out->clear();
  while (true) {
    if (position_ >= text_.size()) return fail("unterminated string");
    unsigned char c = static_cast<unsigned char>(text_[position_]);
    if (c == '"') {
      ++position_;
      return true;
    }
    if (c < 0x20) return fail("unescaped control character in a string");
    if (c == '\\') {
      ++position_;
      if (position_ >= text_.size()) return fail("unterminated string");
      char escape = text_[position_++];
      switch (escape) {
        case '"': *out += '"'; break;
        case '\\': *out += '\\'; break;
        case '/': *out += '/'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'u': {
          uint32_t unit = 0;
          if (!readHex4(&unit)) return false;
          if (unit >= 0xDC00 && unit <= 0xDFFF) return fail("unpaired low surrogate in a \\u escape");
          if (unit >= 0xD800 && unit <= 0xDBFF) {
            // A high surrogate must be followed by an escaped low surrogate.
            if (text_.size() - position_ < 2 || text_[position_] != '\\' ||
                text_[position_ + 1] != 'u') {
              return fail("unpaired high surrogate in a \\u escape");
            }
            position_ += 2;
            uint32_t low = 0;
            if (!readHex4(&low)) return false;
            if (low < 0xDC00 || low > 0xDFFF) return fail("unpaired high surrogate in a \\u escape");
            unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
          }
          appendUtf8(unit, out);
          break;
        }
        default:
          --position_;
          return fail("invalid escape sequence in a string");
      }
      continue;
    }
    // Copy one UTF-8 sequence, checking it is well-formed.
    size_t length = utf8SequenceLength(c);
    if (length == 0 || text_.size() - position_ < length ||
        !isValidUtf8(text_.substr(position_, length))) {
      return fail("invalid UTF-8 in a string");
    }
    out->append(text_.data() + position_, length);
    position_ += length;
  }
}

bool JsonReader::scanNumber(std::string_view* out, size_t* integerLength) {
  if (failed_) return false;
  skipWhitespace();
  size_t start = position_;
  if (position_ < text_.size() && text_[position_] == '-') ++position_;
  if (position_ >= text_.size() || !isDigit(text_[position_])) return fail("expected a number");
  if (text_[position_] == '0') {
    ++position_;
    if (position_ < text_.size() && isDigit(text_[position_])) {
      return fail("leading zeros are not allowed in a number");
    }
  } else {
    while (position_ < text_.size() && isDigit(text_[position_])) ++position_;
  }
  size_t integerEnd = position_;
  if (position_ < text_.size() && text_[position_] == '.') {
    ++position_;
    if (position_ >= text_.size() || !isDigit(text_[position_])) return fail("expected a digit after '.'");
    while (position_ < text_.size() && isDigit(text_[position_])) ++position_;
  }
  if (position_ < text_.size() && (text_[position_] == 'e' || text_[position_] == 'E')) {
    ++position_;
    if (position_ < text_.size() && (text_[position_] == '+' || text_[position_] == '-')) ++position_;
    if (position_ >= text_.size() || !isDigit(text_[position_])) return fail("expected a digit in an exponent");
    while (position_ < text_.size() && isDigit(text_[position_])) ++position_;
  }
  *out = text_.substr(start, position_ - start);
  *integerLength = integerEnd - start;
  return true;
}

bool JsonReader::readNumberText(std::string_view* out) {
  if (failed_) return false;
  skipWhitespace();
  size_t start = position_;
  size_t integerLength = 0;
  if (!scanNumber(out, &integerLength)) return false;
  if (integerLength != out->size()) {
    position_ = start;
    return failValue("expected an integer, found " + quoteForMessage(*out, 40));
  }
  return true;
}

bool JsonReader::skipValue() {
  if (failed_) return false;
  char c = peek();
  if (c == '{') {
    return readObject([this](const std::string&) { return skipValue(); });
  }
  if (c == '[') return readArray([this] { return skipValue(); });
  if (c == '"') {
    std::string ignored;
    return readString(&ignored);
  }
  for (std::string_view literal : {"true", "false", "null"}) {
    if (text_.substr(position_, literal.size()) == literal) {
      position_ += literal.size();
      return true;
    }
  }
  std::string_view number;
  size_t integerLength = 0;
  if (c == '-' || isDigit(c)) return scanNumber(&number, &integerLength);
  return fail("expected a JSON value");
}

bool JsonReader::readUint64(uint64_t* out) {
  skipWhitespace();
  size_t start = position_;
  std::string_view number;
  if (!readNumberText(&number)) return false;
  if (number[0] == '-') {
    position_ = start;
    return failValue("expected a non-negative integer, found " + std::string(number));
  }
  uint64_t value = 0;
  for (char c : number) {
    if (__builtin_mul_overflow(value, 10u, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(c - '0'), &value)) {
      position_ = start;
      return failValue("integer " + std::string(number) + " is out of range");
    }
  }
  *out = value;
  return true;
}

bool JsonReader::readInt64(int64_t* out) {
  skipWhitespace();
  size_t start = position_;
  std::string_view number;
  if (!readNumberText(&number)) return false;
  bool negative = number[0] == '-';
  // Accumulate negatively so that INT64_MIN is representable.
  int64_t value = 0;
  for (size_t i = negative ? 1 : 0; i < number.size(); ++i) {
    if (__builtin_mul_overflow(value, int64_t{10}, &value) ||
        __builtin_sub_overflow(value, static_cast<int64_t>(number[i] - '0'), &value)) {
      position_ = start;
      return failValue("integer " + std::string(number) + " is out of range");
    }
  }
  if (!negative) {
    if (value == INT64_MIN) {
      position_ = start;
      return failValue("integer " + std::string(number) + " is out of range");
    }
    value = -value;
  }
  *out = value;
  return true;
}

bool JsonReader::readNumber(std::string_view* out) {
  size_t integerLength = 0;
  return scanNumber(out, &integerLength);
}

bool JsonReader::readLiteral(std::string_view* out) {
  if (failed_) return false;
  skipWhitespace();
  for (std::string_view literal : {"true", "false", "null"}) {
    if (text_.substr(position_, literal.size()) == literal) {
      position_ += literal.size();
      *out = literal;
      return true;
    }
  }
  return fail("expected a value");
}

}  // namespace tfc::internal
