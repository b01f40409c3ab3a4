// Tests the GPT-2 byte-level BPE tokenizer against runtime/test/bpe_reference.py, an
// independent Python implementation: through the committed fixture data/bpe_fixture.txt
// always, and through fresh random cases from the script when Python 3 is available.
// With TFC_GPT2_TOKENIZER_DIR naming a directory with GPT-2's real vocab.json and
// merges.txt, the real vocabulary is checked too.
#include "tfc/runtime/tokenizer.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bpe_fixture.hpp"
#include "test_util.hpp"

namespace tfc {
namespace {

using ::tfc::testing::isError;
using ::tfc::testing::Random;
using ::tfc::testing::TempDir;
using ::tfc::testing::writeBytes;
using namespace ::tfc::testing::bpe;

// The test's source folder: given by the build (__FILE__ is relative when the compiler is
// called with relative paths, e.g. through ccache's base_dir, and then depends on the
// working directory).
std::string sourceDir() {
#ifdef TFC_RUNTIME_TEST_SOURCE_DIR
  return TFC_RUNTIME_TEST_SOURCE_DIR;
#else
  std::string file = __FILE__;
  size_t slash = file.rfind('/');
  return slash == std::string::npos ? "." : file.substr(0, slash);
#endif
}

std::string fixturePath() {
#ifdef TFC_RUNTIME_TEST_DATA_DIR
  return std::string(TFC_RUNTIME_TEST_DATA_DIR) + "/bpe_fixture.txt";
#else
  return sourceDir() + "/data/bpe_fixture.txt";
#endif
}

std::string pythonExecutable() {
#ifdef TFC_PYTHON3_EXECUTABLE
  if (std::string(TFC_PYTHON3_EXECUTABLE).size() > 0) return TFC_PYTHON3_EXECUTABLE;
#endif
  return "python3";
}

const char* gpt2Dir() {
  const char* dir = std::getenv("TFC_GPT2_TOKENIZER_DIR");
  return dir != nullptr && *dir != '\0' ? dir : nullptr;
}

std::string hexOf(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// GPT-2's printable stand-in for |byte| (bytes_to_unicode), as UTF-8.
std::string standIn(int byte) {
  int cp = byte;
  if (!((byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE)) {
    int n = 0;
    for (int b = 0; b < byte; ++b) {
      if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) ++n;
    }
    cp = 256 + n;
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

// A vocabulary of the 256 byte tokens (byte b has id b) plus |extra| tokens.
std::vector<std::pair<std::string, int32_t>> byteVocab(const std::vector<std::string>& extra) {
  std::vector<std::pair<std::string, int32_t>> vocab;
  for (int b = 0; b < 256; ++b) vocab.emplace_back(standIn(b), b);
  for (const std::string& token : extra) {
    vocab.emplace_back(token, static_cast<int32_t>(vocab.size()));
  }
  return vocab;
}

void checkCases(const Gpt2Tokenizer& tokenizer, const std::vector<Case>& cases,
                const std::string& what) {
  ASSERT_FALSE(cases.empty()) << what;
  int failures = 0;
  for (const Case& c : cases) {
    std::vector<int32_t> ids = tokenizer.encode(c.text);
    EXPECT_EQ(ids, c.ids) << what << ": encode of hex " << hexOf(c.text);
    if (ids != c.ids && ++failures >= 10) break;
    StatusOr<std::string> decoded = tokenizer.decode(c.ids);
    ASSERT_OK(decoded);
    EXPECT_EQ(hexOf(*decoded), hexOf(c.text)) << what << ": decode(encode(s)) != s";
  }
}

void checkDecodes(const Gpt2Tokenizer& tokenizer, const std::vector<DecodeCase>& decodes) {
  for (const DecodeCase& c : decodes) {
    StatusOr<std::string> raw = tokenizer.decode(c.ids);
    ASSERT_OK(raw);
    EXPECT_EQ(hexOf(Gpt2Tokenizer::replaceInvalidUtf8(*raw)), hexOf(c.text));
  }
}

// Loads the synthetic tokenizer of |fixture| from files written into |dir|.
StatusOr<Gpt2Tokenizer> loadFixtureTokenizer(const TempDir& dir, const Fixture& fixture) {
  writeTokenizerFiles(dir.path(), fixture.vocab, fixture.merges);
  return Gpt2Tokenizer::load(dir.path());
}

TEST(Gpt2Tokenizer, CommittedFixture) {
  Fixture fixture = parseFixture(fixturePath());
  ASSERT_GT(fixture.vocab.size(), 256u);
  TempDir dir;
  StatusOr<Gpt2Tokenizer> tokenizer = loadFixtureTokenizer(dir, fixture);
  ASSERT_OK(tokenizer);
  EXPECT_EQ(tokenizer->vocabSize(), static_cast<int32_t>(fixture.vocab.size()));
  ASSERT_TRUE(tokenizer->eosId().has_value());
  EXPECT_EQ(*tokenizer->eosId(), fixture.vocab.back().second);
  checkCases(*tokenizer, fixture.cases, "committed fixture");
  checkDecodes(*tokenizer, fixture.decodes);
}

bool runCommand(const std::string& command) {
  int result = std::system(command.c_str());
  return result == 0;
}

TEST(Gpt2Tokenizer, LiveReference) {
  const std::string python = pythonExecutable();
  if (!runCommand("'" + python + "' -c 'import unicodedata' >/dev/null 2>&1")) {
    GTEST_SKIP() << "no Python 3 (" << python << "); the committed fixture still ran";
  }
  Random random;
  SCOPED_TRACE(random.trace());
  TempDir dir;
  std::string out = dir.file("fixture.txt");
  std::string command = "'" + python + "' '" + sourceDir() + "/bpe_reference.py' synthetic --seed " +
                        std::to_string(random.seed) + " --cases 400 --out '" + out + "'";
  const char* real = gpt2Dir();
  if (real != nullptr) command += std::string(" --gpt2-cases 300 --tokenizer '") + real + "'";
  ASSERT_TRUE(runCommand(command)) << command;
  Fixture fixture = parseFixture(out);
  TempDir tokenizerDir;
  StatusOr<Gpt2Tokenizer> tokenizer = loadFixtureTokenizer(tokenizerDir, fixture);
  ASSERT_OK(tokenizer);
  checkCases(*tokenizer, fixture.cases, "live synthetic");
  checkDecodes(*tokenizer, fixture.decodes);
  if (real != nullptr) {
    StatusOr<Gpt2Tokenizer> gpt2 = Gpt2Tokenizer::load(real);
    ASSERT_OK(gpt2);
    checkCases(*gpt2, fixture.gpt2Cases, "live GPT-2");
    checkDecodes(*gpt2, fixture.gpt2Decodes);
  }
}

TEST(Gpt2Tokenizer, RealGpt2) {
  const char* real = gpt2Dir();
  if (real == nullptr) {
    GTEST_SKIP() << "set TFC_GPT2_TOKENIZER_DIR to a directory with GPT-2's vocab.json and "
                    "merges.txt to check the real vocabulary";
  }
  StatusOr<Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::load(real);
  ASSERT_OK(tokenizer);
  EXPECT_EQ(tokenizer->vocabSize(), 50257);
  EXPECT_EQ(tokenizer->eosId(), std::optional<int32_t>(50256));
  EXPECT_EQ(tokenizer->encode("Hello world"), (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ(tokenizer->encode("<|endoftext|>"), (std::vector<int32_t>{50256}));
  Fixture fixture = parseFixture(fixturePath());
  checkCases(*tokenizer, fixture.gpt2Cases, "committed GPT-2 cases");
  checkDecodes(*tokenizer, fixture.gpt2Decodes);
}

// --- hand-made vocabularies ------------------------------------------------------------

// "Ġ" is the stand-in of ' '; merges: "Ġ a", "Ġa b", "a a".
struct SmallTokenizer {
  SmallTokenizer() {
    writeTokenizerFiles(dir.path(), byteVocab({"\xC4\xA0" "a", "\xC4\xA0" "ab", "aa", "<|endoftext|>"}),
                        {{"\xC4\xA0", "a"}, {"\xC4\xA0" "a", "b"}, {"a", "a"}});
  }
  TempDir dir;
};

TEST(Gpt2Tokenizer, SmallVocabulary) {
  SmallTokenizer small;
  StatusOr<Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::load(small.dir.path());
  ASSERT_OK(tokenizer);
  EXPECT_EQ(tokenizer->vocabSize(), 260);
  EXPECT_EQ(tokenizer->eosId(), std::optional<int32_t>(259));
  EXPECT_EQ(tokenizer->encode(""), std::vector<int32_t>{});
  EXPECT_EQ(tokenizer->encode(" ab"), (std::vector<int32_t>{257}));
  // "aaa": "a a" merges left to right without overlap.
  EXPECT_EQ(tokenizer->encode("aaa"), (std::vector<int32_t>{258, 'a'}));
  EXPECT_EQ(tokenizer->encode("aaaa"), (std::vector<int32_t>{258, 258}));
  // "  a": the first space stands alone (\s+(?!\S)), the second joins the word.
  EXPECT_EQ(tokenizer->encode("  a"), (std::vector<int32_t>{' ', 256}));
  EXPECT_EQ(tokenizer->encode("x<|endoftext|> a<|endoftext|>"),
            (std::vector<int32_t>{'x', 259, 256, 259}));
  EXPECT_EQ(tokenizer->encode("<|endoftext"), (std::vector<int32_t>{'<', '|', 'e', 'n', 'd', 'o',
                                                                    'f', 't', 'e', 'x', 't'}));
  StatusOr<std::string> text = tokenizer->decode({256, 259, 258, '\n'});
  ASSERT_OK(text);
  EXPECT_EQ(*text, " a<|endoftext|>aa\n");
}

// Merges out of rank order: after "a b" (rank 1) merges its first occurrence in "abab", the
// pair "ab a" (rank 0) appears. Hugging Face merges every "a b" before looking again, so
// the answer is "ab ab", not "aba b".
TEST(Gpt2Tokenizer, MergesAllOccurrencesOfARankFirst) {
  TempDir dir;
  writeTokenizerFiles(dir.path(), byteVocab({"ab", "aba"}), {{"ab", "a"}, {"a", "b"}});
  StatusOr<Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::load(dir.path());
  ASSERT_OK(tokenizer);
  EXPECT_EQ(tokenizer->encode("abab"), (std::vector<int32_t>{256, 256}));
  EXPECT_EQ(tokenizer->encode("aba"), (std::vector<int32_t>{257}));
}

TEST(Gpt2Tokenizer, NoEndOfTextInVocabulary) {
  TempDir dir;
  writeTokenizerFiles(dir.path(), byteVocab({}), {});
  StatusOr<Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::load(dir.path());
  ASSERT_OK(tokenizer);
  EXPECT_FALSE(tokenizer->eosId().has_value());
  EXPECT_EQ(tokenizer->encode("<|endoftext|>").size(), 13u);
}

TEST(Gpt2Tokenizer, DecodeRejectsUnknownIds) {
  SmallTokenizer small;
  StatusOr<Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::load(small.dir.path());
  ASSERT_OK(tokenizer);
  EXPECT_TRUE(isError(tokenizer->decode({1, 260}).status(), TFC_INVALID_ARGUMENT, "260",
                      "outside the vocabulary"));
  EXPECT_TRUE(isError(tokenizer->decode({-7}).status(), TFC_INVALID_ARGUMENT, "-7", "token id"));
}

TEST(Gpt2Tokenizer, InvalidUtf8RoundTrips) {
  SmallTokenizer small;
  StatusOr<Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::load(small.dir.path());
  ASSERT_OK(tokenizer);
  Random random;
  SCOPED_TRACE(random.trace());
  std::uniform_int_distribution<int> length(0, 64);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(static_cast<size_t>(length(random.engine)), '\0');
    random.fill(bytes.data(), bytes.size());
    std::vector<int32_t> ids = tokenizer->encode(bytes);
    StatusOr<std::string> decoded = tokenizer->decode(ids);
    ASSERT_OK(decoded);
    ASSERT_EQ(hexOf(*decoded), hexOf(bytes));
  }
}

TEST(Gpt2Tokenizer, ReplaceInvalidUtf8LikePython) {
  auto replace = [](const std::string& s) { return Gpt2Tokenizer::replaceInvalidUtf8(s); };
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(replace("abc \xC3\xA9 \xF0\x9F\x98\x80"), "abc \xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(replace("a\xFF" "b"), "a" + r + "b");
  EXPECT_EQ(replace("\xE2\x82"), r);              // truncated: one maximal subpart
  EXPECT_EQ(replace("\xE2\x82" "A"), r + "A");
  EXPECT_EQ(replace("\xF0\x80\x80"), r + r + r);  // overlong: the lead byte alone
  EXPECT_EQ(replace("\xED\xA0\x80"), r + r + r);  // surrogate
  EXPECT_EQ(replace("\xF0\x9F\x98"), r);
  EXPECT_EQ(replace("\xC0\xAF"), r + r);
}

// The offset is where replaceInvalidUtf8 puts its first U+FFFD.
TEST(Gpt2Tokenizer, FirstInvalidUtf8) {
  auto first = [](const std::string& s) { return Gpt2Tokenizer::firstInvalidUtf8(s); };
  EXPECT_EQ(first(""), std::nullopt);
  EXPECT_EQ(first("abc \xC3\xA9 \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF"), std::nullopt);
  EXPECT_EQ(first("a\xFF" "b"), 1u);
  EXPECT_EQ(first("ab\xE2\x82"), 2u);                  // truncated at the end
  EXPECT_EQ(first("\xC3\xA9\xE2\x82" "A"), 2u);         // truncated before ASCII
  EXPECT_EQ(first("\xC3\xA9\xF0\x80\x80"), 2u);        // overlong
  EXPECT_EQ(first("\xC0\xAF"), 0u);                    // overlong '/'
  EXPECT_EQ(first("x\xED\xA0\x80"), 1u);               // surrogate
  EXPECT_EQ(first("xy\xF4\x90\x80\x80"), 2u);          // above U+10FFFF
  EXPECT_EQ(first("\x80"), 0u);                         // a lone continuation byte
  Random random;
  SCOPED_TRACE(random.trace());
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(16, '\0');
    random.fill(bytes.data(), bytes.size());
    std::optional<size_t> offset = first(bytes);
    std::string replaced = Gpt2Tokenizer::replaceInvalidUtf8(bytes);
    if (!offset) {
      ASSERT_EQ(replaced, bytes);
    } else {
      ASSERT_EQ(replaced.substr(0, *offset), bytes.substr(0, *offset));
      ASSERT_EQ(replaced.substr(*offset, 3), "\xEF\xBF\xBD") << hexOf(bytes);
      ASSERT_EQ(first(bytes.substr(0, *offset)), std::nullopt);
    }
  }
}

TEST(Gpt2Tokenizer, LongWordIsFast) {
  SmallTokenizer small;
  StatusOr<Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::load(small.dir.path());
  ASSERT_OK(tokenizer);
  // One 400001-letter word: quadratic merging would take minutes.
  std::string text(400001, 'a');
  std::vector<int32_t> ids = tokenizer->encode(text);
  ASSERT_EQ(ids.size(), 200001u);
  EXPECT_EQ(ids.front(), 258);
  EXPECT_EQ(ids.back(), 'a');
}

TEST(Gpt2Tokenizer, ConcurrentEncode) {
  Fixture fixture = parseFixture(fixturePath());
  TempDir dir;
  StatusOr<Gpt2Tokenizer> loaded = loadFixtureTokenizer(dir, fixture);
  ASSERT_OK(loaded);
  // Moved, to check that moving keeps it working.
  Gpt2Tokenizer tokenizer = std::move(loaded).value();
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (const Case& c : fixture.cases) mismatches[t] += tokenizer.encode(c.text) != c.ids;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

// --- load errors ---------------------------------------------------------------------------

class Gpt2TokenizerErrors : public ::testing::Test {
 protected:
  Status errorOf(const std::string& vocab, const std::string& merges) {
    writeBytes(dir.file("vocab.json"), vocab);
    writeBytes(dir.file("merges.txt"), merges);
    StatusOr<Gpt2Tokenizer> result = Gpt2Tokenizer::load(dir.path());
    if (result.ok()) return Status();
    return std::move(result).takeStatus();
  }
  std::string vocabJson(const std::vector<std::string>& extra) {
    std::string json = "{";
    auto vocab = byteVocab(extra);
    for (size_t i = 0; i < vocab.size(); ++i) {
      json += (i ? ",\n" : "\n") + jsonString(vocab[i].first) + ": " + std::to_string(vocab[i].second);
    }
    return json + "\n}\n";
  }
  TempDir dir;
};

TEST_F(Gpt2TokenizerErrors, MissingFiles) {
  TempDir empty;
  StatusOr<Gpt2Tokenizer> result = Gpt2Tokenizer::load(empty.path());
  EXPECT_TRUE(isError(result.status(), TFC_NOT_FOUND, empty.file("vocab.json"), ""));
  writeBytes(empty.file("vocab.json"), vocabJson({}));
  result = Gpt2Tokenizer::load(empty.path());
  EXPECT_TRUE(isError(result.status(), TFC_NOT_FOUND, empty.file("merges.txt"), ""));
}

TEST_F(Gpt2TokenizerErrors, InvalidJson) {
  EXPECT_TRUE(isError(errorOf("{\n\"a\": 0,\n\"b\" 1}", ""), TFC_DATA_LOSS,
                      dir.file("vocab.json") + ":3", "expected ':'"));
  EXPECT_TRUE(isError(errorOf("{\"a\": 0} x", ""), TFC_DATA_LOSS, dir.file("vocab.json") + ":1",
                      "after the top-level object"));
  EXPECT_TRUE(isError(errorOf("[]", ""), TFC_DATA_LOSS, dir.file("vocab.json"), "invalid"));
  EXPECT_TRUE(isError(errorOf("{\"a\": 1.5}", ""), TFC_DATA_LOSS, dir.file("vocab.json"), "invalid"));
}

TEST_F(Gpt2TokenizerErrors, BadIds) {
  EXPECT_TRUE(isError(errorOf("{\"a\": 0,\n\"b\": 2}", ""), TFC_DATA_LOSS,
                      dir.file("vocab.json") + ":2", "id 2"));
  EXPECT_TRUE(isError(errorOf("{\"a\": 0,\n\"b\": -1}", ""), TFC_DATA_LOSS,
                      dir.file("vocab.json") + ":2", "id -1"));
  EXPECT_TRUE(isError(errorOf("{\"a\": 0,\n\"b\": 0}", ""), TFC_DATA_LOSS,
                      dir.file("vocab.json") + ":2", "used twice"));
  EXPECT_TRUE(isError(errorOf("{\"a\": 0,\n\"a\": 1}", ""), TFC_DATA_LOSS,
                      dir.file("vocab.json") + ":2", "appears twice"));
  // A vocabulary without a token for every byte.
  EXPECT_TRUE(isError(errorOf("{\"a\": 0}", ""), TFC_DATA_LOSS, dir.file("vocab.json"),
                      "no token for byte 0x00"));
}

TEST_F(Gpt2TokenizerErrors, BadMerges) {
  std::string vocab = vocabJson({"ab", "abc"});
  EXPECT_OK(errorOf(vocab, "#version: 0.2\na b\nab c\n"));
  EXPECT_OK(errorOf(vocab, "a b\r\nab c"));  // no header, CRLF, no final newline
  EXPECT_TRUE(isError(errorOf(vocab, "#version: 0.2\na b\nabc\n"), TFC_DATA_LOSS,
                      dir.file("merges.txt") + ":3", "two tokens"));
  EXPECT_TRUE(isError(errorOf(vocab, "#version: 0.2\na b c\n"), TFC_DATA_LOSS,
                      dir.file("merges.txt") + ":2", "two tokens"));
  EXPECT_TRUE(isError(errorOf(vocab, "a b\n\nab c\n"), TFC_DATA_LOSS,
                      dir.file("merges.txt") + ":2", "two tokens"));
  EXPECT_TRUE(isError(errorOf(vocab, "a b\nab  c\n"), TFC_DATA_LOSS,
                      dir.file("merges.txt") + ":2", "two tokens"));
  EXPECT_TRUE(isError(errorOf(vocab, "a b\nab xyz\n"), TFC_DATA_LOSS,
                      dir.file("merges.txt") + ":2", "'xyz' is not in"));
  EXPECT_TRUE(isError(errorOf(vocab, "a b\nb c\n"), TFC_DATA_LOSS,
                      dir.file("merges.txt") + ":2", "merged token 'bc'"));
}

TEST(ByteTokenizer, EveryByteRoundTrips) {
  std::string text;
  for (int b = 255; b >= 0; --b) text.push_back(static_cast<char>(b));
  text += "h\xC3\xA9llo \xFF\xFE";  // valid and invalid UTF-8 alike
  ByteTokenizer tokenizer;
  std::vector<int32_t> ids = tokenizer.encode(text);
  ASSERT_EQ(ids.size(), text.size());
  EXPECT_EQ(ids[0], 255);
  EXPECT_EQ(ids[255], 0);
  auto decoded = tokenizer.decode(ids);
  ASSERT_OK(decoded);
  EXPECT_EQ(*decoded, text);
  EXPECT_EQ(tokenizer.vocabSize(), 256);
  EXPECT_FALSE(tokenizer.eosId().has_value());
  std::vector<int32_t> bad = {65, 256};
  EXPECT_TRUE(isError(tokenizer.decode(bad).status(), TFC_INVALID_ARGUMENT, "256",
                      "position 1"));
}

// Encoding at nextSplit's offsets gives the ids of the whole: texts of the fixture's
// cases (many scripts, spaces, punctuation, invalid UTF-8, "<|endoftext|>") joined by
// separators that put spaces and newlines in every context, under the fixture's tokenizer
// and one whose merges join runs of white space (which a split inside a run of white space,
// "a\n|\nb", would change: the pattern makes "\n", "\n" of the whole but "\n\n" at the
// end of a piece).
void checkNextSplit(const Gpt2Tokenizer& tokenizer, const Fixture& fixture, Random& random) {
  const char* separators[] = {" ", "  ", "\n", " \n", "\n\n", "x y", "a 1", ". ,", "'s 's",
                              "<|endoftext|> <|endoftext|>", "\t \t", "\xFF \xFF", "\xC2\xA0 x"};
  std::uniform_int_distribution<size_t> pick(0, 1000000);
  for (int round = 0; round < 200; ++round) {
    std::string text;
    for (int k = 0; k < 8; ++k) {
      text += fixture.cases[pick(random.engine) % fixture.cases.size()].text;
      text += separators[pick(random.engine) % std::size(separators)];
    }
    std::vector<int32_t> pieces;
    size_t splits = 0;
    for (size_t at = 0; at < text.size();) {
      size_t next = tokenizer.nextSplit(text, at + 1 + pick(random.engine) % 16);
      ASSERT_GT(next, at);
      ASSERT_LE(next, text.size());
      std::vector<int32_t> ids = tokenizer.encode(std::string_view(text).substr(at, next - at));
      pieces.insert(pieces.end(), ids.begin(), ids.end());
      splits += next < text.size();
      at = next;
    }
    ASSERT_EQ(pieces, tokenizer.encode(text)) << "hex " << hexOf(text) << ", " << splits << " splits";
  }
}

TEST(Gpt2Tokenizer, NextSplitChangesNoId) {
  Fixture fixture = parseFixture(fixturePath());
  TempDir dir;
  StatusOr<Gpt2Tokenizer> tokenizer = loadFixtureTokenizer(dir, fixture);
  ASSERT_OK(tokenizer);
  Random random;
  SCOPED_TRACE(random.trace());
  checkNextSplit(*tokenizer, fixture, random);
  // Stand-ins: "\xC4\xA0" is ' ', "\xC4\x8A" '\n', "\xC4\x89" '\t'.
  const std::string space = "\xC4\xA0", newline = "\xC4\x8A", tab = "\xC4\x89";
  TempDir whiteDir;
  writeTokenizerFiles(whiteDir.path(),
                      byteVocab({space + space, newline + newline, space + newline,
                                 newline + space, tab + space, space + tab, "<|endoftext|>"}),
                      {{space, space}, {newline, newline}, {space, newline}, {newline, space},
                       {tab, space}, {space, tab}});
  StatusOr<Gpt2Tokenizer> white = Gpt2Tokenizer::load(whiteDir.path());
  ASSERT_OK(white);
  checkNextSplit(*white, fixture, random);
  EXPECT_EQ(tokenizer->nextSplit("ab cd", 0), 2u);
  EXPECT_EQ(tokenizer->nextSplit("ab cd", 3), 5u);
  EXPECT_EQ(tokenizer->nextSplit("a  b\nc \xC3\xA9", 0), 9u);  // no space between printables
  ByteTokenizer bytes;
  EXPECT_EQ(bytes.nextSplit("abc", 1), 1u);
  EXPECT_EQ(bytes.nextSplit("abc", 7), 3u);
}

TEST(Tokenizer, LoadBySpec) {
  auto bytes = Tokenizer::load("bytes");
  ASSERT_OK(bytes);
  EXPECT_EQ((*bytes)->kind(), "bytes");
  auto missing = Tokenizer::load("/nonexistent/tokenizer-dir");
  EXPECT_TRUE(isError(missing.status(), TFC_NOT_FOUND, "/nonexistent/tokenizer-dir/vocab.json",
                      "/nonexistent"));
}

}  // namespace
}  // namespace tfc
