// Tests of `tfc-run tokenize`: the llm.c .bin it writes (read back here byte by byte), the
// byte tokenizer's round trip, the GPT-2 BPE tokenizer of the runtime's committed fixture
// (the ids equal the runtime's own encode of each file, end-of-text between files, also
// for text long enough to be encoded in pieces), the validation split, invalid UTF-8 and
// the errors on arguments and files.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../../runtime/test/bpe_fixture.hpp"
#include "cli_test_util.hpp"
#include "tfc/runtime/tokenizer.hpp"

namespace {

using namespace tfc_run_test;

constexpr int32_t kMagic = 20240520;
constexpr size_t kHeaderBytes = 1024;

struct TokenFile {
  int32_t version = 0;
  std::vector<uint32_t> tokens;
};

// Reads an llm.c .bin as its format says: 256 int32, then count ids of the version's width.
TokenFile readTokenFile(const std::string& path) {
  std::string bytes = readAll(path);
  TokenFile file;
  EXPECT_GE(bytes.size(), kHeaderBytes) << path;
  if (bytes.size() < kHeaderBytes) return file;
  int32_t header[256];
  std::memcpy(header, bytes.data(), sizeof(header));
  EXPECT_EQ(header[0], kMagic) << path;
  for (int i = 3; i < 256; ++i) EXPECT_EQ(header[i], 0) << path << ": header[" << i << "]";
  file.version = header[1];
  size_t width = header[1] == 1 ? 2 : 4;
  EXPECT_TRUE(header[1] == 1 || header[1] == 2) << path;
  EXPECT_EQ(bytes.size(), kHeaderBytes + static_cast<size_t>(header[2]) * width) << path;
  for (size_t at = kHeaderBytes; at + width <= bytes.size(); at += width) {
    uint32_t id = 0;
    std::memcpy(&id, bytes.data() + at, width);  // little-endian hosts
    file.tokens.push_back(id);
  }
  return file;
}

std::vector<uint32_t> bytesAsTokens(const std::string& text) {
  return std::vector<uint32_t>(reinterpret_cast<const unsigned char*>(text.data()),
                               reinterpret_cast<const unsigned char*>(text.data()) + text.size());
}

class TokenizeTest : public ScratchDirTest {
 protected:
  std::string write(const std::string& name, const std::string& bytes) {
    tfc::testing::bpe::writeFile(file(name), bytes);
    return file(name);
  }
  // The runtime's fixture tokenizer as vocab.json and merges.txt in DIR/bpe.
  std::string writeFixtureTokenizer() {
    tfc::testing::bpe::Fixture fixture = tfc::testing::bpe::parseFixture(TFC_BPE_FIXTURE_PATH);
    std::string dir = file("bpe");
    ::mkdir(dir.c_str(), 0755);
    tfc::testing::bpe::writeTokenizerFiles(dir, fixture.vocab, fixture.merges);
    return dir;
  }
  // Text made of the fixture's UTF-8 cases: letters, digits, punctuation and spaces of many
  // scripts, separated by spaces and newlines.
  static std::string fixtureText(size_t atLeast) {
    tfc::testing::bpe::Fixture fixture = tfc::testing::bpe::parseFixture(TFC_BPE_FIXTURE_PATH);
    std::string text;
    const char* separators[] = {" ", "\n", "  ", "\n\n", " \n", ". ", "x y"};
    for (size_t i = 0; text.size() < atLeast; ++i) {
      const std::string& piece = fixture.cases[i % fixture.cases.size()].text;
      if (tfc::Gpt2Tokenizer::firstInvalidUtf8(piece)) continue;
      text += piece + separators[i % 7];
    }
    return text;
  }
};

TEST_F(TokenizeTest, BytesRoundTripAnyBytes) {
  std::string text(5000, '\0');
  std::mt19937 random(7);
  for (char& c : text) c = static_cast<char>(random());  // invalid UTF-8, NULs: all taken
  std::string input = write("in.bin.txt", text);
  Result result = run({"tokenize", "--tokenizer", "bytes", input, "-o", file("out.bin")});
  ASSERT_EQ(result.code, 0) << result.output;
  EXPECT_TRUE(contains(result.output,
                       "1 file, 4.88 KiB, bytes tokenizer (vocab 256): 5000 tokens, "
                       "1.000 tokens/byte"))
      << result.output;
  EXPECT_TRUE(contains(result.output,
                       "wrote " + file("out.bin") + ": 5000 tokens (llm.c .bin version 1, uint16)"))
      << result.output;
  TokenFile out = readTokenFile(file("out.bin"));
  EXPECT_EQ(out.version, 1);
  EXPECT_EQ(out.tokens, bytesAsTokens(text));
  EXPECT_FALSE(exists(file("out.val.bin")));
}

TEST_F(TokenizeTest, ValidationSplitLikeNanoGpt) {
  std::string text(1000, 'a');
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>('a' + i % 26);
  std::string input = write("input.txt", text);
  Result result = run({"tokenize", "--tokenizer", "bytes", input, "-o", file("train.bin"),
                       "--val-fraction", "0.1"});
  ASSERT_EQ(result.code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "wrote " + file("val.bin") + ": 100 validation tokens"))
      << result.output;
  EXPECT_TRUE(contains(result.output, "wrote " + file("train.bin") + ": 900 training tokens"))
      << result.output;
  std::vector<uint32_t> all = bytesAsTokens(text);
  EXPECT_EQ(readTokenFile(file("train.bin")).tokens,
            std::vector<uint32_t>(all.begin(), all.begin() + 900));
  EXPECT_EQ(readTokenFile(file("val.bin")).tokens,
            std::vector<uint32_t>(all.begin() + 900, all.end()));

  // The default name without "train" in it, and an explicit one; int(n * (1 - f)) tokens
  // for training.
  result = run({"tokenize", "--tokenizer", "bytes", input, "-o", file("tokens.bin"),
                "--val-fraction", "0.25"});
  ASSERT_EQ(result.code, 0) << result.output;
  EXPECT_EQ(readTokenFile(file("tokens.bin")).tokens.size(), 750u);
  EXPECT_EQ(readTokenFile(file("tokens.val.bin")).tokens.size(), 250u);
  result = run({"tokenize", "--tokenizer", "bytes", input, "-o", file("a.bin"), "--val-fraction",
                "0.001", "--val-output", file("held.bin")});
  ASSERT_EQ(result.code, 0) << result.output;
  EXPECT_EQ(readTokenFile(file("a.bin")).tokens.size(), 999u);
  EXPECT_EQ(readTokenFile(file("held.bin")).tokens.size(), 1u);
}

TEST_F(TokenizeTest, FilesAndStandardInputInOrder) {
  std::string a = write("a.txt", "first file\n"), b = write("b.txt", "second\n");
  Result result = run({"tokenize", "--tokenizer", "bytes", a, "-", b, "-o", file("out.bin")},
                      "printf 'from stdin' |");
  ASSERT_EQ(result.code, 0) << result.output;
  EXPECT_TRUE(contains(result.output,
                       "files joined as they are (the bytes tokenizer has no end-of-text token)"))
      << result.output;
  EXPECT_EQ(readTokenFile(file("out.bin")).tokens, bytesAsTokens("first file\nfrom stdinsecond\n"));
}

// Under BPE every file is encoded as the runtime encodes it, and the end-of-text token
// stands between files; a text of several MiB is encoded in pieces, cut where the pieces
// change no token, so its ids are those of one encode() of the whole.
TEST_F(TokenizeTest, Gpt2BpeFixture) {
  std::string dir = writeFixtureTokenizer();
  auto tokenizer = tfc::Gpt2Tokenizer::load(dir);
  ASSERT_OK(tokenizer);
  ASSERT_TRUE(tokenizer->eosId().has_value());
  std::string small = fixtureText(2000), big = fixtureText(size_t{5} << 20) + "<|endoftext|>end";
  std::string a = write("a.txt", small), b = write("b.txt", big);
  Result result = run(
      {"tokenize", "--tokenizer", dir, a, b, "-o", file("train.bin"), "--val-fraction", "0.05"});
  ASSERT_EQ(result.code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "files joined by the end-of-text token <|endoftext|> (id " +
                                          std::to_string(*tokenizer->eosId()) + ")"))
      << result.output;
  std::vector<uint32_t> expected;
  for (int32_t id : tokenizer->encode(small)) expected.push_back(static_cast<uint32_t>(id));
  expected.push_back(static_cast<uint32_t>(*tokenizer->eosId()));
  for (int32_t id : tokenizer->encode(big)) expected.push_back(static_cast<uint32_t>(id));
  TokenFile train = readTokenFile(file("train.bin")), val = readTokenFile(file("val.bin"));
  EXPECT_EQ(train.version, 1);
  EXPECT_EQ(train.tokens.size(), static_cast<size_t>(expected.size() * 0.95));
  std::vector<uint32_t> all = train.tokens;
  all.insert(all.end(), val.tokens.begin(), val.tokens.end());
  ASSERT_EQ(all.size(), expected.size());
  EXPECT_TRUE(all == expected);
}

TEST_F(TokenizeTest, InvalidUtf8RefusedUnderBpeWithItsOffset) {
  std::string dir = writeFixtureTokenizer();
  std::string input = write("latin1.txt", "caf\xC3\xA9\nna\xEFve\n");  // 0xEF: Latin-1 'ï'
  Result result = run({"tokenize", "--tokenizer", dir, input, "-o", file("out.bin")});
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_TRUE(contains(result.output, "tfc-run: error: " + input +
                                          ": not valid UTF-8 at byte offset 8 (line 2; bytes "
                                          "ef 76 65 0a): the gpt2-bpe tokenizer reads UTF-8 text"))
      << result.output;
  EXPECT_FALSE(exists(file("out.bin")));
  // The byte tokenizer takes it.
  result = run({"tokenize", "--tokenizer", "bytes", input, "-o", file("out.bin")});
  EXPECT_EQ(result.code, 0) << result.output;
}

TEST_F(TokenizeTest, FileErrorsNameTheFile) {
  std::string input = write("in.txt", "hello");
  Result result =
      run({"tokenize", "--tokenizer", "bytes", input, file("missing.txt"), "-o", file("out.bin")});
  EXPECT_EQ(result.code, 1);
  EXPECT_TRUE(contains(result.output, file("missing.txt") + ": cannot open: No such file"))
      << result.output;
  result = run({"tokenize", "--tokenizer", "bytes", dir_, "-o", file("out.bin")});
  EXPECT_EQ(result.code, 1);
  EXPECT_TRUE(contains(result.output, dir_ + ": is a directory, not a file")) << result.output;
  result = run(
      {"tokenize", "--tokenizer", "bytes", input, write("empty.txt", ""), "-o", file("out.bin")});
  EXPECT_EQ(result.code, 1);
  EXPECT_TRUE(contains(result.output, file("empty.txt") + ": empty, nothing to tokenize"))
      << result.output;
  result = run({"tokenize", "--tokenizer", "bytes", "-", "-o", file("out.bin")}, "true |");
  EXPECT_TRUE(contains(result.output, "standard input: empty")) << result.output;
  result = run({"tokenize", "--tokenizer", "bytes", input, "-o", file("no/such/dir/out.bin")});
  EXPECT_EQ(result.code, 1);
  EXPECT_TRUE(contains(result.output, file("no/such/dir/out.bin"))) << result.output;
  result = run({"tokenize", "--tokenizer", "bytes", input, "-o", "/dev/full"});
  EXPECT_EQ(result.code, 1);
  EXPECT_TRUE(contains(result.output, "/dev/full")) << result.output;
  result = run({"tokenize", "--tokenizer", file("nope"), input, "-o", file("out.bin")});
  EXPECT_EQ(result.code, 1);
  EXPECT_TRUE(contains(result.output, file("nope") + "/vocab.json")) << result.output;
  EXPECT_TRUE(contains(result.output, "--tokenizer takes 'bytes', a Hugging Face tokenizer.json or its folder")) << result.output;
  // A split that leaves one side empty depends on the data: a failure, not a usage error.
  result = run({"tokenize", "--tokenizer", "bytes", input, "-o", file("train.bin"),
                "--val-fraction", "0.9"});
  EXPECT_EQ(result.code, 1);
  EXPECT_TRUE(contains(result.output, "--val-fraction 0.9 of 5 tokens leaves no training tokens"))
      << result.output;
  result = run({"tokenize", "--tokenizer", "bytes", input, "-o", file("train.bin"),
                "--val-fraction", "1e-18"});
  EXPECT_EQ(result.code, 1);
  EXPECT_TRUE(contains(result.output, "leaves no validation tokens")) << result.output;
  EXPECT_FALSE(exists(file("out.bin")) || exists(file("train.bin")) || exists(file("val.bin")));
}

TEST_F(TokenizeTest, UsageErrors) {
  std::string input = write("in.txt", "hello");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"--tokenizer", "bytes", "-o", "x.bin"}, "missing IN.txt"},
      {{input, "-o", "x.bin"}, "missing --tokenizer DIR|FILE.json|bytes"},
      {{"--tokenizer", "bytes", input}, "missing -o FILE.bin"},
      {{"--tokenizer", "bytes", "-", "-", "-o", "x.bin"}, "standard input (-) can be given once"},
      {{"--tokenizer", "bytes", input, "-o", "x.bin", "--val-fraction", "1"},
       "--val-fraction '1' is not a number in [0, 1)"},
      {{"--tokenizer", "bytes", input, "-o", "x.bin", "--val-fraction", "-0.1"},
       "--val-fraction '-0.1' is not a number in [0, 1)"},
      {{"--tokenizer", "bytes", input, "-o", "x.bin", "--val-fraction", "ten"},
       "--val-fraction 'ten' is not a number"},
      {{"--tokenizer", "bytes", input, "-o", "x.bin", "--val-output", "v.bin"},
       "--val-output needs --val-fraction F > 0"},
      {{"--tokenizer", "bytes", input, "-o", "x.npy"},
       "'x.npy': tokenize writes llm.c .bin files, not .npy"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"tokenize"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    Result result = run(args);
    EXPECT_EQ(result.code, 2) << c.message << "\n" << result.output;
    EXPECT_TRUE(contains(result.output, "tfc-run: error: " + c.message)) << result.output;
    EXPECT_TRUE(contains(result.output, "(see tfc-run tokenize --help)")) << result.output;
  }
  // tokenize takes no model.
  Result result = run({"model.so", "tokenize", "--tokenizer", "bytes", input, "-o", "x.bin"});
  EXPECT_EQ(result.code, 2);
  EXPECT_TRUE(contains(result.output, "'tokenize' takes no model")) << result.output;
  // Two outputs to one file: refused before any work by the check every command gets
  // (output-collisions.test has the others), naming both.
  result = run({"tokenize", "--tokenizer", "bytes", input, "-o", file("x.bin"), "--val-fraction",
                "0.1", "--val-output", file("x.bin")});
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_TRUE(contains(result.output, "tfc-run: error: --val-output '" + file("x.bin") +
                                          "' is the same file as -o '" + file("x.bin") + "'"))
      << result.output;
  EXPECT_FALSE(exists(file("x.bin")));
}

TEST_F(TokenizeTest, HelpTeachesFormatsAndWhereTheFilesComeFrom) {
  Result result = run({"tokenize", "--help"});
  EXPECT_EQ(result.code, 0);
  for (const char* part : {"usage: tfc-run tokenize", "--val-fraction F", "20240520",
                           "https://huggingface.co/openai-community/gpt2", "encoder.json",
                           "--tokenizer bytes input.txt", "docs/tokenizers.md"}) {
    EXPECT_TRUE(contains(result.output, part)) << part << "\n" << result.output;
  }
  result = run({"--help"});
  EXPECT_TRUE(contains(result.output, "tokenize")) << result.output;
}

}  // namespace
