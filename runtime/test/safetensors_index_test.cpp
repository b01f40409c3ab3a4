// Tests the parser of model.safetensors.index.json: what a real index holds, and each way a
// hostile or broken one is refused (with the file, and for syntax the line and column).
#include <gtest/gtest.h>

#include <string>

#include "io/safetensors_index.hpp"
#include "test_util.hpp"

namespace tfc::internal {
namespace {

using testing::isError;

TEST(SafetensorsIndexTest, ReadsTheWeightMapAndIgnoresMetadata) {
  auto index = parseSafetensorsIndex(R"({
  "metadata": {"total_size": 26953662464, "format": "pt", "nested": [1.5e3, null, true, {}]},
  "weight_map": {
    "lm_head.weight": "model-00002-of-00002.safetensors",
    "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
    "model.norm.weight": "sub/model-00002-of-00002.safetensors",
    "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors"
  },
  "extra": "ignored"
})",
                                     "ckpt/model.safetensors.index.json");
  ASSERT_OK(index);
  ASSERT_EQ(index->shards.size(), 3u);
  EXPECT_EQ(index->shards[0], "model-00001-of-00002.safetensors");
  EXPECT_EQ(index->shards[1], "model-00002-of-00002.safetensors");
  EXPECT_EQ(index->shards[2], "sub/model-00002-of-00002.safetensors");
  ASSERT_EQ(index->tensors.size(), 4u);
  EXPECT_EQ(index->tensors.at("lm_head.weight"), 1u);
  EXPECT_EQ(index->tensors.at("model.embed_tokens.weight"), 0u);
  EXPECT_EQ(index->tensors.at("model.norm.weight"), 2u);
}

TEST(SafetensorsIndexTest, MalformedJsonNamesTheFileLineAndColumn) {
  auto index = parseSafetensorsIndex("{\n  \"weight_map\": {\n    \"a\": \"s.safetensors\"\n"
                                     "    \"b\": \"s.safetensors\"}}",
                                     "dir/model.safetensors.index.json");
  EXPECT_TRUE(isError(index.status(), TFC_INVALID_ARGUMENT,
                      "dir/model.safetensors.index.json:4:5:", "expected ',' or '}'"));
  EXPECT_TRUE(isError(parseSafetensorsIndex("", "i.json").status(), TFC_INVALID_ARGUMENT,
                      "i.json:1:1:", "expected '{'"));
  EXPECT_TRUE(isError(parseSafetensorsIndex("{\"weight_map\": {\"a\": \"s\"}} x", "i.json").status(),
                      TFC_INVALID_ARGUMENT, "i.json:1:", "after the JSON object"));
  EXPECT_TRUE(isError(parseSafetensorsIndex("{\"metadata\": [1, 2,]}", "i.json").status(),
                      TFC_INVALID_ARGUMENT, "i.json:1:", "expected a JSON value"));
}

TEST(SafetensorsIndexTest, WeightMapMustBeThereAsAnObjectOfStrings) {
  EXPECT_TRUE(isError(parseSafetensorsIndex(R"({"metadata": {}})", "i.json").status(),
                      TFC_INVALID_ARGUMENT, "i.json", "no \"weight_map\""));
  EXPECT_TRUE(isError(parseSafetensorsIndex(R"({"weight_map": {}})", "i.json").status(),
                      TFC_INVALID_ARGUMENT, "i.json", "lists no tensors"));
  EXPECT_TRUE(isError(parseSafetensorsIndex(R"({"weight_map": ["a"]})", "i.json").status(),
                      TFC_INVALID_ARGUMENT, "i.json:1:", "must be an object"));
  EXPECT_TRUE(isError(parseSafetensorsIndex(R"({"weight_map": {"a": 3}})", "i.json").status(),
                      TFC_INVALID_ARGUMENT, "i.json:1:", "shard of tensor 'a' must be a string"));
  EXPECT_TRUE(isError(
      parseSafetensorsIndex(R"({"weight_map": {"a": "x"}, "weight_map": {"b": "y"}})", "i.json")
          .status(),
      TFC_INVALID_ARGUMENT, "i.json:1:", "appears twice"));
}

TEST(SafetensorsIndexTest, ATensorListedTwiceNamesBothShards) {
  auto index = parseSafetensorsIndex(
      R"({"weight_map": {"w": "a.safetensors", "v": "a.safetensors", "w": "b.safetensors"}})",
      "i.json");
  EXPECT_TRUE(isError(index.status(), TFC_INVALID_ARGUMENT, "i.json:1:",
                      "tensor 'w' is listed twice, in 'a.safetensors' and in 'b.safetensors'"));
}

TEST(SafetensorsIndexTest, ShardPathsMayNotLeaveTheDirectory) {
  for (const char* shard : {"../other/model.safetensors", "/etc/passwd", "a/../../b",
                            "sub/..", "..", "a//b", "./a", "", "a\\u0000b"}) {
    SCOPED_TRACE(shard);
    std::string text = std::string(R"({"weight_map": {"w": ")") + shard + "\"}}";
    auto index = parseSafetensorsIndex(text, "i.json");
    EXPECT_TRUE(isError(index.status(), TFC_INVALID_ARGUMENT, "i.json:1:", "tensor 'w'"));
  }
  EXPECT_TRUE(isError(parseSafetensorsIndex(R"({"weight_map": {"w": "../x"}})", "i.json").status(),
                      TFC_INVALID_ARGUMENT, "'../x'", "leaves the index's directory"));
  EXPECT_TRUE(isError(parseSafetensorsIndex(R"({"weight_map": {"w": "/x"}})", "i.json").status(),
                      TFC_INVALID_ARGUMENT, "'/x'", "is absolute"));
}

}  // namespace
}  // namespace tfc::internal
