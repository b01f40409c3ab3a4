// Unit tests of the tokenizer.json tokenizers (hf_tokenizer.cpp) and their parts: the split
// patterns, NFC, each normalizer, pre-tokenizer, decoder and added-token option, and the
// error messages. Expected values come from Hugging Face's `tokenizers` and Python's
// unicodedata; test/Tools/tfc-run/hf-tokenizer.test compares whole trained tokenizers.
#include "tfc/runtime/hf_tokenizer.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "base/json_value.hpp"
#include "tokenizers/split_patterns.hpp"
#include "test_status.hpp"
#include "test_util.hpp"
#include "base/unicode.hpp"

namespace tfc {
namespace {

using ::tfc::testing::isError;
using ::tfc::testing::TempDir;
using ::tfc::testing::writeBytes;

std::vector<std::string> split(std::string_view text, internal::SplitPattern pattern) {
  std::vector<size_t> ends;
  internal::splitByPattern(text, pattern, &ends);
  std::vector<std::string> pieces;
  size_t begin = 0;
  for (size_t end : ends) {
    pieces.emplace_back(text.substr(begin, end - begin));
    begin = end;
  }
  return pieces;
}

constexpr std::string_view kSplitText = "I'LL pay 12345 $s!!\n\n  \tok\r\n x  y";

TEST(SplitPatterns, Gpt2) {
  EXPECT_EQ(split(kSplitText, internal::SplitPattern::kGpt2),
            (std::vector<std::string>{"I", "'", "LL", " pay", " 12345", " $", "s", "!!", "\n\n  ",
                                      "\t", "ok", "\r\n", " x", " ", " y"}));
}

TEST(SplitPatterns, Llama3) {
  EXPECT_EQ(split(kSplitText, internal::SplitPattern::kLlama3),
            (std::vector<std::string>{"I", "'LL", " pay", " ", "123", "45", " $", "s", "!!\n\n",
                                      "  ", "\tok", "\r\n", " x", " ", " y"}));
}

TEST(SplitPatterns, Qwen2) {
  EXPECT_EQ(split(kSplitText, internal::SplitPattern::kQwen2),
            (std::vector<std::string>{"I", "'LL", " pay", " ", "1", "2", "3", "4", "5", " $", "s",
                                      "!!\n\n", "  ", "\tok", "\r\n", " x", " ", " y"}));
}

TEST(SplitPatterns, RecognizedByExactText) {
  for (auto pattern : {internal::SplitPattern::kGpt2, internal::SplitPattern::kLlama3,
                       internal::SplitPattern::kQwen2}) {
    EXPECT_EQ(internal::splitPatternOf(internal::splitPatternRegex(pattern)), pattern);
  }
  EXPECT_FALSE(internal::splitPatternOf(" ?\\p{L}+"));
  // Any bytes are covered, invalid UTF-8 too.
  EXPECT_EQ(split("a\xff\xfe b", internal::SplitPattern::kLlama3),
            (std::vector<std::string>{"a", "\xff\xfe", " b"}));
}

TEST(Unicode, Nfc) {
  EXPECT_EQ(internal::toNfc("e\xCC\x81"), "\xC3\xA9");  // e + U+0301 -> é
  EXPECT_EQ(internal::toNfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // Hangul
  EXPECT_EQ(internal::toNfc("a\xCC\x82\xCC\xA3"), "\xE1\xBA\xAD");       // reordered, composed
  EXPECT_EQ(internal::toNfc("q\xCC\x87\xCC\xA3"), "q\xCC\xA3\xCC\x87");  // ordered only
  EXPECT_EQ(internal::toNfc("\xE2\x84\xAB"), "\xC3\x85");                // U+212B -> Å
  EXPECT_EQ(internal::toNfc("o\xCC\x88\xCC\x81"), "\xC3\xB6\xCC\x81");   // blocked second mark
  EXPECT_EQ(internal::toNfc("\xCD\x84"), "\xCC\x88\xCC\x81");            // excluded U+0344
  EXPECT_EQ(internal::toNfc("A\xCC\x8A\xCC\x81"), "\xC7\xBA");           // two steps
  EXPECT_EQ(internal::toNfc("plain ascii"), "plain ascii");
  EXPECT_EQ(internal::toNfc("x\xFF\xCC\x81"), "x\xFF\xCC\x81");  // an invalid byte blocks
}

TEST(JsonValue, LineColumnOfErrors) {
  internal::JsonValue value;
  std::string error;
  size_t offset = 0;
  std::string text = "{\n  \"a\": [1, 2.5e3, true, null],\n  \"b\": x\n}";
  ASSERT_FALSE(internal::parseJson(text, &value, &error, &offset));
  EXPECT_EQ(internal::lineColumn(text, offset), "3:8");
  ASSERT_TRUE(internal::parseJson("{\"a\": [1, 2.5e3, true, null]}", &value, &error, &offset));
  const internal::JsonValue* a = value.get("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 4u);
  EXPECT_EQ(a->items[0].asInt(), 1);
  EXPECT_FALSE(a->items[1].asInt());
  EXPECT_TRUE(a->items[2].boolean);
  EXPECT_TRUE(a->items[3].isNull());
}

// ------------------------------------------------------------------ small tokenizers
// A byte-level vocabulary: every byte's stand-in, then merged tokens.
std::string byteLevelVocab(const std::vector<std::string>& extra) {
  std::array<uint32_t, 256> cps = internal::byteToCodePoint();
  std::string vocab = "{";
  int id = 0;
  auto add = [&](const std::string& token) {
    std::string escaped;
    for (char c : token) {
      if (c == '"' || c == '\\') escaped += '\\';
      escaped += c;
    }
    vocab += (id == 0 ? "\"" : ", \"") + escaped + "\": " + std::to_string(id);
    ++id;
  };
  for (int b = 0; b < 256; ++b) {
    std::string standIn;
    internal::appendUtf8(cps[b], &standIn);
    add(standIn);
  }
  for (const std::string& token : extra) add(token);
  return vocab + "}";
}

struct Parts {
  std::string model;
  std::string normalizer = "null";
  std::string preTokenizer = "null";
  std::string decoder;
  std::string added = "[]";
  std::string post = "null";
};

std::string tokenizerJson(const Parts& parts) {
  return "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null, \"added_tokens\": " +
         parts.added + ", \"normalizer\": " + parts.normalizer +
         ", \"pre_tokenizer\": " + parts.preTokenizer + ", \"post_processor\": " + parts.post +
         ", \"decoder\": " + parts.decoder + ", \"model\": " + parts.model + "}";
}

// GPT-2 style: "Ġt", "he", "Ġthe" (ids 256..258), <|endoftext|> 259.
Parts byteLevelParts() {
  Parts parts;
  parts.model =
      "{\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"fuse_unk\": false, "
      "\"byte_fallback\": false, \"ignore_merges\": false, \"vocab\": " +
      byteLevelVocab({"Ġt", "he", "Ġthe", "<|endoftext|>"}) +
      ", \"merges\": [\"Ġ t\", [\"h\", \"e\"], \"Ġt he\"]}";
  parts.preTokenizer =
      "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": "
      "true, \"use_regex\": true}";
  parts.decoder =
      "{\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, "
      "\"use_regex\": true}";
  parts.added =
      "[{\"id\": 259, \"content\": \"<|endoftext|>\", \"single_word\": false, "
      "\"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}]";
  return parts;
}

// SentencePiece style: <unk> <s> </s>, the 256 byte tokens, then letters and "▁".
std::string sentencePieceModel(const std::string& extraMerges = "") {
  std::string vocab = "{\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2";
  int id = 3;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab += ", \"" + std::string(name) + "\": " + std::to_string(id++);
  }
  for (const char* token : {"▁", "a", "b", "c", "▁a", "▁ab"}) {
    vocab += ", \"" + std::string(token) + "\": " + std::to_string(id++);
  }
  vocab += "}";
  return "{\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\", \"fuse_unk\": true, "
         "\"byte_fallback\": true, \"vocab\": " +
         vocab + ", \"merges\": [\"▁ a\", \"▁a b\"" + extraMerges + "]}";
}
constexpr int32_t kSpace = 259, kA = 260, kB = 261, kC = 262, kSpaceA = 263, kSpaceAB = 264;

const std::string kSentencePieceAdded =
    "[{\"id\": 0, \"content\": \"<unk>\", \"special\": true}, "
    "{\"id\": 1, \"content\": \"<s>\", \"special\": true}, "
    "{\"id\": 2, \"content\": \"</s>\", \"special\": true}]";
const std::string kSentencePieceDecoder =
    "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": "
    "\"▁\"}, \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}, "
    "{\"type\": \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 0}]}";

Parts llama2Parts() {
  Parts parts;
  parts.model = sentencePieceModel();
  parts.normalizer =
      "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", "
      "\"prepend\": \"▁\"}, {\"type\": \"Replace\", \"pattern\": {\"String\": "
      "\" \"}, \"content\": \"▁\"}]}";
  parts.decoder = kSentencePieceDecoder;
  parts.added = kSentencePieceAdded;
  parts.post =
      "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": "
      "\"<s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], "
      "\"pair\": [], \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [1], "
      "\"tokens\": [\"<s>\"]}}}";
  return parts;
}

StatusOr<HfTokenizer> fromJson(const std::string& json) {
  HfTokenizer::Files files;
  files.tokenizerJson = json;
  return HfTokenizer::fromContents(files);
}

TEST(HfTokenizer, ByteLevelBpe) {
  auto tokenizer = fromJson(tokenizerJson(byteLevelParts()));
  ASSERT_OK(tokenizer);
  EXPECT_EQ(tokenizer->kind(), "hf-bpe-bytelevel");
  EXPECT_EQ(tokenizer->vocabSize(), 260);
  EXPECT_EQ(tokenizer->eosId(), 259);
  EXPECT_EQ(tokenizer->bosId(), std::nullopt);
  // "the the<|endoftext|>!": "t" "he" (no merge "t he"), "Ġthe", the special token, "!".
  EXPECT_EQ(tokenizer->encode("the the<|endoftext|>!"),
            (std::vector<int32_t>{'t', 257, 258, 259, '!'}));
  auto text = tokenizer->decode(tokenizer->encode("the the<|endoftext|>\xE2\x82\xAC"));
  ASSERT_OK(text);
  EXPECT_EQ(*text, "the the<|endoftext|>\xE2\x82\xAC");
  // Raw bytes from decode() (a partial character), U+FFFD from decodeText().
  std::vector<int32_t> partial = {0xE2, 0x82};
  EXPECT_EQ(*tokenizer->decode(partial), "\xE2\x82");
  EXPECT_EQ(*tokenizer->decodeText(partial), "\xEF\xBF\xBD");
  EXPECT_TRUE(isError(tokenizer->decode({260}).status(), TFC_INVALID_ARGUMENT,
                      "token id 260 (at position 0)", "[0, 260)"));
}

TEST(HfTokenizer, ByteLevelPrefixSpace) {
  Parts parts = byteLevelParts();
  parts.preTokenizer = "{\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"use_regex\": true}";
  auto tokenizer = fromJson(tokenizerJson(parts));
  ASSERT_OK(tokenizer);
  // A space is put before each segment between added tokens that lacks one.
  EXPECT_EQ(tokenizer->encode("the<|endoftext|>the"), (std::vector<int32_t>{258, 259, 258}));
  EXPECT_EQ(tokenizer->nextSplit("ab\ncd", 0), 5u);  // a prefix space forbids splitting
}

TEST(HfTokenizer, IgnoreMergesTakesWholeWords) {
  Parts parts = byteLevelParts();
  // "the" is in the vocabulary (id 260) but no merge makes it from "t" and "he".
  parts.model = "{\"type\": \"BPE\", \"ignore_merges\": true, \"vocab\": " +
                byteLevelVocab({"Ġt", "he", "Ġthe", "the"}) +
                ", \"merges\": [\"Ġ t\", \"h e\", \"Ġt he\"]}";
  parts.added = "[]";
  auto tokenizer = fromJson(tokenizerJson(parts));
  ASSERT_OK(tokenizer);
  EXPECT_EQ(tokenizer->encode("the thee"), (std::vector<int32_t>{259, 258, 'e'}));
  parts.model.replace(parts.model.find("true"), 4, "false");
  auto merging = fromJson(tokenizerJson(parts));
  ASSERT_OK(merging);
  EXPECT_EQ(merging->encode("the"), (std::vector<int32_t>{'t', 257}));
}

TEST(HfTokenizer, SentencePieceBpe) {
  auto tokenizer = fromJson(tokenizerJson(llama2Parts()));
  ASSERT_OK(tokenizer);
  EXPECT_EQ(tokenizer->kind(), "hf-bpe-sentencepiece");
  EXPECT_EQ(tokenizer->bosId(), 1);
  EXPECT_EQ(tokenizer->eosId(), 2);
  // Prepend + Replace: "▁ab▁c": "▁ab", "▁", "c"; "é" by byte fallback (C3 A9).
  EXPECT_EQ(tokenizer->encode("ab c\xC3\xA9"),
            (std::vector<int32_t>{kSpaceAB, kSpace, kC, 3 + 0xC3, 3 + 0xA9}));
  // An added token splits the text; each piece gets its own "▁".
  EXPECT_EQ(tokenizer->encode("a</s>a"), (std::vector<int32_t>{kSpaceA, 2, kSpaceA}));
  EXPECT_EQ(tokenizer->encodePrompt("a"), (std::vector<int32_t>{1, kSpaceA}));
  std::vector<int32_t> ids = tokenizer->encode("ab c\xC3\xA9");
  EXPECT_EQ(*tokenizer->decodeText(ids), "ab c\xC3\xA9");  // Strip drops the first space
  EXPECT_EQ(*tokenizer->decode(ids), " ab c\xC3\xA9");     // decode() is concatenative
  // Byte tokens that are not UTF-8: one U+FFFD per byte in decodeText, as `tokenizers`.
  EXPECT_EQ(*tokenizer->decodeText({kA, 3 + 0xC3, 3 + 0x41}), "a\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(*tokenizer->decode({kA, 3 + 0xC3}), "a\xC3");
  EXPECT_EQ(tokenizer->nextSplit("ab\ncd", 0), 5u);  // "▁" is prepended: never split
}

TEST(HfTokenizer, UnknownCharactersWithoutByteFallback) {
  Parts parts = llama2Parts();
  parts.model.replace(parts.model.find("\"byte_fallback\": true"), 21, "\"byte_fallback\": false");
  auto fused = fromJson(tokenizerJson(parts));
  ASSERT_OK(fused);
  // "▁a" "<unk>" (x and y fused) "b".
  EXPECT_EQ(fused->encode("axyb"), (std::vector<int32_t>{kSpaceA, 0, kB}));
  parts.model.replace(parts.model.find("\"fuse_unk\": true"), 16, "\"fuse_unk\": false");
  auto unfused = fromJson(tokenizerJson(parts));
  ASSERT_OK(unfused);
  EXPECT_EQ(unfused->encode("axyb"), (std::vector<int32_t>{kSpaceA, 0, 0, kB}));
}

TEST(HfTokenizer, MetaspacePrependSchemes) {
  Parts parts = llama2Parts();
  parts.normalizer = "null";
  parts.preTokenizer =
      "{\"type\": \"Metaspace\", \"replacement\": \"▁\", \"prepend_scheme\": "
      "\"first\", \"split\": false}";
  auto first = fromJson(tokenizerJson(parts));
  ASSERT_OK(first);
  // Only the text's first segment gets a "▁".
  EXPECT_EQ(first->encode("a</s>a"), (std::vector<int32_t>{kSpaceA, 2, kA}));
  parts.preTokenizer =
      "{\"type\": \"Metaspace\", \"replacement\": \"▁\", \"prepend_scheme\": "
      "\"always\", \"split\": true}";
  parts.decoder =
      "{\"type\": \"Metaspace\", \"replacement\": \"▁\", \"prepend_scheme\": "
      "\"always\", \"split\": true}";
  auto always = fromJson(tokenizerJson(parts));
  ASSERT_OK(always);
  EXPECT_EQ(always->encode("a</s>a"), (std::vector<int32_t>{kSpaceA, 2, kSpaceA}));
  // Split before each "▁": "▁a", "▁", "▁ab" (no merge across pieces).
  EXPECT_EQ(always->encode("a  ab"), (std::vector<int32_t>{kSpaceA, kSpace, kSpaceAB}));
  // The Metaspace decoder drops the first token's "▁" in a whole text only.
  EXPECT_EQ(*always->decodeText({kSpaceA, kSpaceA}), "a a");
  EXPECT_EQ(*always->decode({kSpaceA, kSpaceA}), " a a");
  parts.preTokenizer =
      "{\"type\": \"Metaspace\", \"replacement\": \"▁\", \"prepend_scheme\": "
      "\"never\", \"split\": true}";
  auto never = fromJson(tokenizerJson(parts));
  ASSERT_OK(never);
  EXPECT_EQ(never->encode("a b"), (std::vector<int32_t>{kA, kSpace, kB}));
}

TEST(HfTokenizer, AddedTokenOptions) {
  Parts parts = byteLevelParts();
  parts.model = "{\"type\": \"BPE\", \"vocab\": " + byteLevelVocab({"<t>", "<tool>", "<w>", "ab"}) +
                ", \"merges\": [\"a b\"]}";
  parts.added =
      "[{\"id\": 256, \"content\": \"<t>\", \"special\": true},"
      " {\"id\": 257, \"content\": \"<tool>\", \"special\": false, \"lstrip\": true, "
      "\"rstrip\": true, \"normalized\": false},"
      " {\"id\": 258, \"content\": \"<w>\", \"special\": false, \"single_word\": true, "
      "\"normalized\": false},"
      " {\"id\": 259, \"content\": \"ab\", \"special\": false, \"normalized\": true}]";
  parts.preTokenizer = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false}";
  auto tokenizer = fromJson(tokenizerJson(parts));
  ASSERT_OK(tokenizer);
  // Longest match first: "<tool>" rather than "<t>".
  EXPECT_EQ(tokenizer->encode("<tool>"), (std::vector<int32_t>{257}));
  // lstrip and rstrip take the spaces around.
  EXPECT_EQ(tokenizer->encode("x  <tool>  y"), (std::vector<int32_t>{'x', 257, 'y'}));
  // single_word: only between non-word characters.
  EXPECT_EQ(tokenizer->encode("<w>"), (std::vector<int32_t>{258}));
  EXPECT_EQ(tokenizer->encode("x<w>").size(), 4u);  // x < w >
  // A normalized added token is found in normalized text (here: as it is).
  EXPECT_EQ(tokenizer->encode("xab"), (std::vector<int32_t>{'x', 259}));
  EXPECT_EQ(tokenizer->tokenId("<tool>"), 257);
}

TEST(HfTokenizer, DigitsPreTokenizer) {
  Parts parts = byteLevelParts();
  parts.model = "{\"type\": \"BPE\", \"vocab\": " + byteLevelVocab({"12", "a1"}) +
                ", \"merges\": [\"1 2\", \"a 1\"]}";
  parts.added = "[]";
  parts.preTokenizer = "{\"type\": \"Digits\", \"individual_digits\": false}";
  auto runs = fromJson(tokenizerJson(parts));
  ASSERT_OK(runs);
  // "a", "12" (a run of digits; "a 1" cannot merge across pieces), "b".
  EXPECT_EQ(runs->encode("a12b"), (std::vector<int32_t>{'a', 256, 'b'}));
  parts.preTokenizer = "{\"type\": \"Digits\", \"individual_digits\": true}";
  auto single = fromJson(tokenizerJson(parts));
  ASSERT_OK(single);
  EXPECT_EQ(single->encode("a12b"), (std::vector<int32_t>{'a', '1', '2', 'b'}));
}

// Split at a literal with each delimiter behavior. The pieces of "a  b c " from `tokenizers`
// (pre_tokenizers.Split(" ", behavior).pre_tokenize_str): each two-byte piece has a token.
TEST(HfTokenizer, SplitAtALiteral) {
  // Byte b is token b; "aĠ" 256, "Ġb" 257, "bĠ" 258, "cĠ" 259, "Ġc" 260, "ĠĠ" 261.
  const std::pair<const char*, std::vector<int32_t>> cases[] = {
      {"Isolated", {'a', ' ', ' ', 'b', ' ', 'c', ' '}},  // a,  ,  , b,  , c,
      {"Removed", {'a', 'b', 'c'}},                       // a, b, c
      {"MergedWithPrevious", {256, ' ', 258, 259}},       // "a ", " ", "b ", "c "
      {"MergedWithNext", {'a', ' ', 257, 260, ' '}},      // a, " ", " b", " c", " "
      {"Contiguous", {'a', 261, 'b', ' ', 'c', ' '}},     // a, "  ", b, " ", c, " "
  };
  for (const auto& [behavior, ids] : cases) {
    SCOPED_TRACE(behavior);
    Parts parts = byteLevelParts();
    parts.added = "[]";
    parts.preTokenizer = std::string(
                             "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
                             "\"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"") +
                         behavior +
                         "\", \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": "
                         "false, \"use_regex\": false}]}";
    parts.model =
        "{\"type\": \"BPE\", \"vocab\": " + byteLevelVocab({"aĠ", "Ġb", "bĠ", "cĠ", "Ġc", "ĠĠ"}) +
        ", \"merges\": [\"a Ġ\", \"Ġ b\", \"b Ġ\", \"c Ġ\", \"Ġ c\", \"Ġ Ġ\"]}";
    auto tokenizer = fromJson(tokenizerJson(parts));
    ASSERT_OK(tokenizer);
    EXPECT_EQ(tokenizer->encode("a  b c "), ids);
  }
}

TEST(HfTokenizer, PunctuationPreTokenizer) {
  // `tokenizers`: Punctuation("contiguous").pre_tokenize_str("a,b!! «c» $x") is a , b !!
  // " " « c » " " $ x. "b !" merges first: only "!!" as a piece of its own is token 256.
  Parts parts = byteLevelParts();
  parts.added = "[]";
  parts.model = "{\"type\": \"BPE\", \"vocab\": " + byteLevelVocab({"!!", "b!"}) +
                ", \"merges\": [\"b !\", \"! !\"]}";
  parts.preTokenizer =
      "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Punctuation\", \"behavior\": "
      "\"Contiguous\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": "
      "false}]}";
  auto tokenizer = fromJson(tokenizerJson(parts));
  ASSERT_OK(tokenizer);
  // « and » are two bytes each (C2 AB, C2 BB).
  EXPECT_EQ(
      tokenizer->encode("a,b!! \xC2\xAB"
                        "c\xC2\xBB $x"),
      (std::vector<int32_t>{'a', ',', 'b', 256, ' ', 0xC2, 0xAB, 'c', 0xC2, 0xBB, ' ', '$', 'x'}));
  EXPECT_TRUE(internal::isPunctuation('$'));      // ASCII's, though Unicode's Sc
  EXPECT_TRUE(internal::isPunctuation(0x00AB));   // « Pi
  EXPECT_FALSE(internal::isPunctuation(0x00A2));  // ¢ Sc outside ASCII
  EXPECT_FALSE(internal::isPunctuation('a'));
}

TEST(HfTokenizer, NfcNormalizer) {
  Parts parts = byteLevelParts();
  parts.normalizer = "{\"type\": \"NFC\"}";
  auto tokenizer = fromJson(tokenizerJson(parts));
  ASSERT_OK(tokenizer);
  // Token b is byte b's stand-in: NFC's "é" is bytes C3 A9.
  EXPECT_EQ(tokenizer->encode("e\xCC\x81"), (std::vector<int32_t>{0xC3, 0xA9}));
  EXPECT_EQ(tokenizer->encode("e\xCC\x81"), tokenizer->encode("\xC3\xA9"));
}

TEST(HfTokenizer, NextSplitChangesNoId) {
  Parts parts = byteLevelParts();
  parts.preTokenizer =
      "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
      "{\"Regex\": \"" +
      std::string(
          "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|"
          "\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|"
          "\\\\s+(?!\\\\S)|\\\\s+") +
      "\"}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", "
      "\"add_prefix_space\": false, \"use_regex\": false}]}";
  auto tokenizer = fromJson(tokenizerJson(parts));
  ASSERT_OK(tokenizer);
  std::string text = "the the\nthe !\n the\n\nx1\n2 end";
  size_t p = tokenizer->nextSplit(text, 0);
  EXPECT_EQ(p, 8u);  // after "the the\n"
  std::vector<int32_t> pieces;
  for (size_t at = 0; at < text.size();) {
    size_t cut = tokenizer->nextSplit(text, at + 1);
    auto part = tokenizer->encode(std::string_view(text).substr(at, cut - at));
    pieces.insert(pieces.end(), part.begin(), part.end());
    at = cut;
  }
  EXPECT_EQ(pieces, tokenizer->encode(text));
}

TEST(HfTokenizer, ConcurrentEncode) {
  auto tokenizer = fromJson(tokenizerJson(byteLevelParts()));
  ASSERT_OK(tokenizer);
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) {
    texts.push_back("the the " + std::to_string(i) + " \xC3\xA9the<|endoftext|>" +
                    std::string(static_cast<size_t>(i % 7), 'e'));
  }
  std::vector<std::vector<int32_t>> expected;
  for (const std::string& text : texts) expected.push_back(tokenizer->encode(text));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          if (tokenizer->encode(texts[(i + t) % texts.size()]) !=
              expected[(i + t) % texts.size()]) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(HfTokenizer, EndOfTextFromConfigFiles) {
  std::string json = tokenizerJson(llama2Parts());
  HfTokenizer::Files files;
  files.tokenizerJson = json;
  files.tokenizerConfig = R"({"eos_token": {"content": "<s>", "lstrip": false}})";
  auto fromConfig = HfTokenizer::fromContents(files);
  ASSERT_OK(fromConfig);
  EXPECT_EQ(fromConfig->eosId(), 1);
  files.tokenizerConfig = R"({"eos_token": "<unk>"})";
  EXPECT_EQ(HfTokenizer::fromContents(files)->eosId(), 0);
  files.tokenizerConfig = R"({"eos_token": null})";
  files.generationConfig = R"({"eos_token_id": [7, 2]})";
  EXPECT_EQ(HfTokenizer::fromContents(files)->eosId(), 7);
  files.tokenizerConfig = R"({"eos_token": "<nope>"})";
  EXPECT_TRUE(isError(HfTokenizer::fromContents(files).status(), TFC_DATA_LOSS,
                      "tokenizer_config.json:1:15", "eos_token: '<nope>' is not a token"));
}

TEST(HfTokenizer, EndOfTextByName) {
  // </s> matched in normalized text (as "▁</s>" behind Prepend) is still found by name.
  Parts parts = llama2Parts();
  parts.added = "[{\"id\": 2, \"content\": \"</s>\", \"special\": true, \"normalized\": true}]";
  auto tokenizer = fromJson(tokenizerJson(parts));
  ASSERT_OK(tokenizer);
  EXPECT_EQ(tokenizer->eosId(), 2);
  EXPECT_EQ(tokenizer->encode("a </s>"), (std::vector<int32_t>{kSpaceA, 2}));
}

TEST(HfTokenizer, LoadFromFolderOrFile) {
  TempDir dir;
  writeBytes(dir.path() + "/tokenizer.json", tokenizerJson(llama2Parts()));
  // GPT-2's files too: tokenizer.json wins.
  writeBytes(dir.path() + "/vocab.json", "{}");
  writeBytes(dir.path() + "/merges.txt", "");
  writeBytes(dir.path() + "/generation_config.json", R"({"eos_token_id": 0})");
  for (const std::string& spec : {dir.path(), dir.path() + "/tokenizer.json"}) {
    auto tokenizer = Tokenizer::load(spec);
    ASSERT_OK(tokenizer);
    EXPECT_EQ((*tokenizer)->kind(), "hf-bpe-sentencepiece");
    EXPECT_EQ((*tokenizer)->eosId(), 0);
    EXPECT_EQ((*tokenizer)->bosId(), 1);
  }
  EXPECT_TRUE(isError(Tokenizer::load(dir.path() + "/missing.json").status(), TFC_NOT_FOUND,
                      dir.path() + "/missing.json", "cannot open"));
}

// ----------------------------------------------------------------------------- errors
struct ErrorCase {
  const char* what;
  std::string json;
  tfc_status_code_t code;
  std::string message;  // a part of the message
};

TEST(HfTokenizer, ErrorsNameTheFileAndPlace) {
  Parts base = byteLevelParts();
  auto with = [&](auto edit) {
    Parts parts = base;
    edit(parts);
    return tokenizerJson(parts);
  };
  std::vector<ErrorCase> cases = {
      {"malformed JSON", "{\"model\": {\n  \"type\": BPE}}", TFC_DATA_LOSS,
       "tokenizer.json:2:11: invalid JSON"},
      {"not an object", "[1]", TFC_DATA_LOSS, "expected an object, found an array"},
      {"no model", "{}", TFC_DATA_LOSS, "missing \"model\""},
      {"WordPiece", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", TFC_UNIMPLEMENTED,
       "model.type: model type 'WordPiece' is not supported"},
      {"Unigram", "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", TFC_UNIMPLEMENTED,
       "model type 'Unigram'"},
      {"merge of unknown tokens", with([](Parts& p) {
         p.model =
             "{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, "
             "\"merges\": [\"a b\", \"b c\"]}";
       }),
       TFC_DATA_LOSS, "model.merges[1]: token 'c' is not in model.vocab"},
      {"merge result not in the vocabulary", with([](Parts& p) {
         p.model =
             "{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [[\"a\", \"b\"]]}";
       }),
       TFC_DATA_LOSS, "model.merges[0]: the merged token 'ab' is not in model.vocab"},
      {"malformed merge", with([](Parts& p) {
         p.model = "{\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a\"]}";
       }),
       TFC_DATA_LOSS, "model.merges[0]: expected two tokens separated by one space"},
      {"duplicate id", with([](Parts& p) {
         p.model = "{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}";
       }),
       TFC_DATA_LOSS, "model.vocab['b']: id 0 is also the id of 'a'"},
      {"negative id", with([](Parts& p) {
         p.model = "{\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}";
       }),
       TFC_DATA_LOSS, "model.vocab['a']: expected an id in [0, 2^31 - 1), found '-1'"},
      {"huge id", with([](Parts& p) {
         p.model = "{\"type\": \"BPE\", \"vocab\": {\"a\": 2000000000}, \"merges\": []}";
       }),
       TFC_DATA_LOSS, "is far beyond the vocabulary's 1 entries"},
      {"added token id taken",
       with([](Parts& p) { p.added = "[{\"id\": 5, \"content\": \"<x>\", \"special\": true}]"; }),
       TFC_DATA_LOSS, "added_tokens[0].id: id 5 of '<x>' is already the id of"},
      {"unknown regex", with([](Parts& p) {
         p.preTokenizer =
             "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\w+\"}, "
             "\"behavior\": \"Isolated\", \"invert\": false}";
       }),
       // Quoted with its backslashes escaped, as the file writes it.
       TFC_UNIMPLEMENTED,
       "pre_tokenizer.pattern.Regex: the pre-tokenization regex '\\\\w+' is not"},
      {"Split behavior", with([](Parts& p) {
         p.preTokenizer =
             "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"'s|'t|'re|'ve|'m|'ll|'d| "
             "?\\\\p{L}+| ?\\\\p{N}+| ?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+(?!\\\\S)|\\\\s+\"}, "
             "\"behavior\": \"Removed\", \"invert\": false}";
       }),
       TFC_UNIMPLEMENTED,
       "pre_tokenizer.behavior: Split behavior 'Removed' is not supported with a regex"},
      {"unknown Split behavior", with([](Parts& p) {
         p.preTokenizer =
             "{\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, "
             "\"behavior\": \"Sideways\", \"invert\": false}";
       }),
       TFC_DATA_LOSS, "pre_tokenizer.behavior: unknown split behavior 'Sideways'"},
      {"normalizer", with([](Parts& p) {
         p.normalizer = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFKC\"}]}";
       }),
       TFC_UNIMPLEMENTED, "normalizer.normalizers[0].type: normalizer 'NFKC' is not supported"},
      {"decoder", with([](Parts& p) { p.decoder = "{\"type\": \"WordPiece\"}"; }),
       TFC_UNIMPLEMENTED, "decoder.type: decoder 'WordPiece' is not supported"},
      {"no decoder", with([](Parts& p) { p.decoder = "null"; }), TFC_UNIMPLEMENTED,
       "without a decoder"},
      {"suffix", with([](Parts& p) {
         p.model =
             "{\"type\": \"BPE\", \"vocab\": {}, \"merges\": [], "
             "\"end_of_word_suffix\": \"</w>\"}";
       }),
       TFC_UNIMPLEMENTED, "model.end_of_word_suffix: end_of_word_suffix is not supported"},
      {"dropout", with([](Parts& p) {
         p.model = "{\"type\": \"BPE\", \"vocab\": {}, \"merges\": [], \"dropout\": 0.1}";
       }),
       TFC_UNIMPLEMENTED, "model.dropout: BPE dropout is not supported"},
      {"unknown unk_token", with([](Parts& p) {
         p.model =
             "{\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], "
             "\"unk_token\": \"<unk>\"}";
       }),
       TFC_DATA_LOSS, "model.unk_token: '<unk>' is not in model.vocab"},
      {"bad type", with([](Parts& p) { p.preTokenizer = "{\"type\": 3}"; }), TFC_DATA_LOSS,
       "pre_tokenizer.type: expected a string, found a number"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.what);
    auto tokenizer = fromJson(c.json);
    EXPECT_TRUE(isError(tokenizer.status(), c.code, "tokenizer.json:", c.message));
  }
}

}  // namespace
}  // namespace tfc
