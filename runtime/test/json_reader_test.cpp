// Tests the strict JSON reader used for safetensors headers.
#include "base/json_reader.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tfc::internal {
namespace {

bool readOneString(const std::string& text, std::string* out, std::string* error = nullptr) {
  JsonReader reader(text);
  bool ok = reader.readString(out) && reader.atEnd();
  if (error != nullptr) *error = reader.error();
  return ok;
}

TEST(JsonReader, StringEscapes) {
  std::string value;
  ASSERT_TRUE(readOneString(R"("a\"b\\c\/d\n\t\u0041\u00e9\ud83d\ude00")", &value));
  EXPECT_EQ(value, "a\"b\\c/d\n\tA\xc3\xa9\xf0\x9f\x98\x80");
  ASSERT_TRUE(readOneString("\"h.0.attn.c_attn.weight\"", &value));
  EXPECT_EQ(value, "h.0.attn.c_attn.weight");
}

TEST(JsonReader, BadStrings) {
  std::string value, error;
  EXPECT_FALSE(readOneString("\"abc", &value, &error));
  EXPECT_NE(error.find("unterminated"), std::string::npos) << error;
  EXPECT_FALSE(readOneString("\"a\nb\"", &value, &error));
  EXPECT_NE(error.find("control character"), std::string::npos) << error;
  EXPECT_FALSE(readOneString(R"("\x")", &value, &error));
  EXPECT_FALSE(readOneString(R"("\ud800")", &value, &error));   // lone high surrogate
  EXPECT_NE(error.find("surrogate"), std::string::npos) << error;
  EXPECT_FALSE(readOneString(R"("\udc00")", &value, &error));   // lone low surrogate
  EXPECT_FALSE(readOneString(R"("\u12")", &value, &error));
  EXPECT_FALSE(readOneString("\"\xff\"", &value, &error));       // invalid UTF-8
  EXPECT_NE(error.find("UTF-8"), std::string::npos) << error;
  EXPECT_FALSE(readOneString("\"\xc0\xaf\"", &value, &error));   // overlong
  EXPECT_FALSE(readOneString("\"\xed\xa0\x80\"", &value, &error));  // encoded surrogate
  EXPECT_FALSE(readOneString("\"\xe2\x82\"", &value, &error));   // truncated sequence
}

TEST(JsonReader, Integers) {
  auto readInt = [](const std::string& text, int64_t* out) {
    JsonReader reader(text);
    return reader.readInt64(out) && reader.atEnd();
  };
  int64_t value = 0;
  EXPECT_TRUE(readInt("0", &value));
  EXPECT_EQ(value, 0);
  EXPECT_TRUE(readInt(" -42 ", &value));
  EXPECT_EQ(value, -42);
  EXPECT_TRUE(readInt("9223372036854775807", &value));
  EXPECT_EQ(value, INT64_MAX);
  EXPECT_TRUE(readInt("-9223372036854775808", &value));
  EXPECT_EQ(value, INT64_MIN);
  EXPECT_FALSE(readInt("9223372036854775808", &value));
  EXPECT_FALSE(readInt("-9223372036854775809", &value));
  EXPECT_FALSE(readInt("01", &value));
  EXPECT_FALSE(readInt("1.5", &value));
  EXPECT_FALSE(readInt("1e3", &value));
  EXPECT_FALSE(readInt("-", &value));
  EXPECT_FALSE(readInt("+1", &value));
  EXPECT_FALSE(readInt("", &value));

  uint64_t unsignedValue = 0;
  JsonReader big("18446744073709551615");
  EXPECT_TRUE(big.readUint64(&unsignedValue));
  EXPECT_EQ(unsignedValue, UINT64_MAX);
  JsonReader tooBig("18446744073709551616");
  EXPECT_FALSE(tooBig.readUint64(&unsignedValue));
  EXPECT_NE(tooBig.error().find("out of range"), std::string::npos) << tooBig.error();
  JsonReader negative("-1");
  EXPECT_FALSE(negative.readUint64(&unsignedValue));
}

TEST(JsonReader, ObjectsAndArrays) {
  JsonReader reader(R"( {"a": [1, 2, 3], "b": []} )");
  std::vector<int64_t> a;
  size_t bCount = 0;
  ASSERT_TRUE(reader.readObject([&](std::string key) {
    if (key == "a") {
      return reader.readArray([&] {
        int64_t v;
        if (!reader.readInt64(&v)) return false;
        a.push_back(v);
        return true;
      });
    }
    return reader.readArray([&] { ++bCount; return true; });
  })) << reader.error();
  EXPECT_TRUE(reader.atEnd());
  EXPECT_EQ(a, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(bCount, 0u);
}

TEST(JsonReader, SyntaxErrorsCarryOffsets) {
  auto arrayOfInts = [](const std::string& text, std::string* error) {
    JsonReader reader(text);
    bool ok = reader.readArray([&] {
      int64_t v;
      return reader.readInt64(&v);
    });
    *error = reader.error();
    return ok;
  };
  std::string error;
  EXPECT_FALSE(arrayOfInts("[1, 2,]", &error));  // trailing comma
  EXPECT_FALSE(arrayOfInts("[1 2]", &error));
  EXPECT_NE(error.find("at byte 3"), std::string::npos) << error;
  EXPECT_FALSE(arrayOfInts("[1,", &error));
  EXPECT_FALSE(arrayOfInts("", &error));
}

TEST(JsonReader, DepthLimit) {
  std::string deep(JsonReader::kMaxDepth + 1, '[');
  JsonReader reader(deep);
  std::function<bool()> nest = [&] { return reader.readArray(nest); };
  EXPECT_FALSE(reader.readArray(nest));
  EXPECT_NE(reader.error().find("nesting"), std::string::npos) << reader.error();
}

}  // namespace
}  // namespace tfc::internal
