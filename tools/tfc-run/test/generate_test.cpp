// `tfc-run MODEL.so generate`: argument and model errors, checked by running the binary on
// the runtime's fake artifacts (which have no prefill/decode/sample). Generation itself is
// checked against a NumPy reference by test/e2e/generate/check_generate.py.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.hpp"

namespace {

using namespace tfc_run_test;

const std::string kModel = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_model.so";

// stdout and stderr apart: generate's errors must leave stdout empty.
struct SplitResult {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

class GenerateTest : public ScratchDirTest {
 protected:
  // Runs tfc-run with |args|, stdout and stderr apart.
  SplitResult run(const std::vector<std::string>& args) {
    std::string command = quote(TFC_RUN_PATH);
    for (const std::string& arg : args) command += " " + quote(arg);
    command += " >" + quote(file("stdout")) + " 2>" + quote(file("stderr"));
    int status = std::system(command.c_str());
    SplitResult result;
    result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = readAll(file("stdout"));
    result.err = readAll(file("stderr"));
    return result;
  }

  // A run that must fail with |code| and a stderr containing |message|, printing nothing on
  // stdout.
  void expectError(const std::vector<std::string>& args, int code, const std::string& message) {
    SplitResult result = run(args);
    std::string shown;
    for (const std::string& arg : args) shown += " " + arg;
    EXPECT_EQ(result.code, code) << "tfc-run" << shown << "\n" << result.err;
    EXPECT_TRUE(contains(result.err, "tfc-run: error: ")) << shown << "\n" << result.err;
    EXPECT_TRUE(contains(result.err, message))
        << "tfc-run" << shown << "\nexpected: " << message << "\ngot: " << result.err;
    EXPECT_EQ(result.out, "") << shown;
  }
};

const std::vector<std::string> kPrompt = {"--prompt-tokens", "1 2 3", "--max-new-tokens", "4"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST_F(GenerateTest, HelpDescribesTheCommand) {
  SplitResult help = run({"generate", "--help"});
  EXPECT_EQ(help.code, 0);
  for (const char* part : {"usage: tfc-run MODEL.so generate", "--prompt-tokens", "--tokenizer",
                           "--max-new-tokens", "--temperature", "--top-k", "--top-p", "--seed",
                           "--threads", "--quiet", "row 0", "examples:"}) {
    EXPECT_TRUE(contains(help.out, part)) << part;
  }
  SplitResult overview = run({"--help"});
  EXPECT_TRUE(contains(overview.out, "generate")) << overview.out;
  EXPECT_FALSE(contains(overview.out, "not implemented")) << overview.out;
  EXPECT_EQ(run({file("missing.so"), "generate", "--help"}).code, 0);
}

TEST_F(GenerateTest, UsageErrors) {
  expectError({kModel, "generate"}, 2, "missing the prompt");
  expectError({kModel, "generate", "--max-new-tokens", "3"}, 2, "missing the prompt");
  expectError({kModel, "generate", "--prompt", "hi", "--max-new-tokens", "3"}, 2,
              "--prompt needs --tokenizer DIR");
  expectError({kModel, "generate", "--prompt", "hi", "--prompt-tokens", "1", "--tokenizer",
               dir_},
              2, "give one of --prompt-tokens, --prompt and --prompts");
  expectError(with({kModel, "generate"}, with(kPrompt, {"--temprature", "1"})), 2,
              "unknown option '--temprature'");
  expectError(with({kModel, "generate"}, with(kPrompt, {"--temprature", "1"})), 2,
              "did you mean '--temperature'?");
  expectError(with({kModel, "generate"}, with(kPrompt, {"--bogus"})), 2,
              "unknown option '--bogus'");
  expectError(with({kModel, "generate", "extra"}, kPrompt), 2, "unexpected argument 'extra'");
  expectError({kModel, "generate", "--prompt-tokens", "1 two 3", "--max-new-tokens", "2"}, 2,
              "'two' is not a token id");
  expectError({kModel, "generate", "--prompt-tokens", "1 -2", "--max-new-tokens", "2"}, 2,
              "'-2' is not a token id");
  expectError({kModel, "generate", "--prompt-tokens", "1", "--max-new-tokens", "0"}, 2,
              "--max-new-tokens '0' is not a positive integer");
  expectError({kModel, "generate", "--prompt-tokens", "1", "--max-new-tokens", "x"}, 2,
              "--max-new-tokens 'x'");
  expectError(with({kModel, "generate"}, with(kPrompt, {"--temperature", "-1"})), 2,
              "--temperature '-1' is not a number >= 0");
  expectError(with({kModel, "generate"}, with(kPrompt, {"--top-k", "-3"})), 2, "--top-k '-3'");
  expectError(with({kModel, "generate"}, with(kPrompt, {"--top-p", "0"})), 2,
              "--top-p '0' is not a number in (0, 1]");
  expectError(with({kModel, "generate"}, with(kPrompt, {"--top-p", "1.5"})), 2, "--top-p '1.5'");
  expectError(with({kModel, "generate"}, with(kPrompt, {"--seed", "-1"})), 2, "--seed '-1'");
  expectError(with({kModel, "generate"}, with(kPrompt, {"--threads", "many"})), 2,
              "--threads 'many'");
  expectError(with({kModel, "generate"}, with(kPrompt, {"--seed", "1", "--seed", "2"})), 2,
              "option --seed given twice");
  expectError({"generate", "--prompt-tokens", "1"}, 2, "needs a model first");
}

TEST_F(GenerateTest, EmptyPrompt) {
  // Empty prompts are refused before the model is looked at.
  expectError({kModel, "generate", "--prompt-tokens", "", "--max-new-tokens", "2"}, 1,
              "the prompt is empty");
  expectError({kModel, "generate", "--prompt-tokens", " , ", "--max-new-tokens", "2"}, 1,
              "the prompt is empty");
}

TEST_F(GenerateTest, BadTokenizerFolder) {
  expectError({kModel, "generate", "--prompt", "hi", "--tokenizer", file("nowhere"),
               "--max-new-tokens", "2"},
              1, "--tokenizer " + file("nowhere") + ": ");
  // A folder with a malformed vocab.json: the error names the file.
  std::ofstream(file("vocab.json")) << "{\"a\": 0,";
  std::ofstream(file("merges.txt")) << "#version: 0.2\n";
  SplitResult result = run({kModel, "generate", "--prompt", "hi", "--tokenizer", dir_,
                       "--max-new-tokens", "2"});
  EXPECT_EQ(result.code, 1) << result.err;
  EXPECT_TRUE(contains(result.err, "tfc-run: error: --tokenizer ")) << result.err;
  EXPECT_TRUE(contains(result.err, "vocab.json")) << result.err;
  EXPECT_EQ(result.out, "");
}

// The fake bigram training model has prefill, decode and sample (vocabulary 16, n_ctx 8):
// text through the byte tokenizer, and stop token ids.
TEST_F(GenerateTest, ByteTokenizerAndStopTokens) {
  const std::string model = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_train.so";
  ASSERT_EQ(run({model, "init", "-o", file("w.safetensors")}).code, 0);
  const std::vector<std::string> base = {model, "generate", "--weights", file("w.safetensors"),
                                         "--max-new-tokens", "4", "--quiet"};
  SplitResult ids = run(with(base, {"--prompt-tokens", "5"}));
  ASSERT_EQ(ids.code, 0) << ids.err;
  std::vector<int> tokens;
  for (std::istringstream line(ids.out); line;) {
    int id = -1;
    if (line >> id) tokens.push_back(id);
  }
  ASSERT_EQ(tokens.size(), 4u) << ids.out;

  // "\x05" is byte token 5: the same ids, each streamed as its byte before the ids line.
  SplitResult text = run(with(base, {"--prompt", "\x05", "--tokenizer", "bytes"}));
  ASSERT_EQ(text.code, 0) << text.err;
  std::string bytes;
  for (int id : tokens) bytes += static_cast<char>(id);
  EXPECT_EQ(text.out, bytes + "\n" + ids.out);

  SplitResult stopped = run(with(base, {"--prompt-tokens", "5", "--stop-token",
                                        std::to_string(tokens[1]), "--stop-token", "15"}));
  ASSERT_EQ(stopped.code, 0) << stopped.err;
  size_t expected = 1;  // up to and with the first stop token
  while (tokens[expected - 1] != tokens[1] && tokens[expected - 1] != 15) ++expected;
  std::string prefix;
  for (size_t i = 0; i < expected; ++i) prefix += (i ? " " : "") + std::to_string(tokens[i]);
  EXPECT_EQ(stopped.out, prefix + "\n");
  expectError(with(base, {"--prompt-tokens", "5", "--stop-token", "x"}), 2,
              "--stop-token 'x' is not a token id");
}

// --prompts: the fake bigram model has the serving entries (2 rows): one JSON line a
// request, in the file's order, each with the tokens --prompt-tokens gives it alone.
TEST_F(GenerateTest, PromptsFileRunsEveryPromptAsAlone) {
  const std::string model = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_train.so";
  ASSERT_EQ(run({model, "init", "-o", file("w.safetensors")}).code, 0);
  const std::vector<std::string> prompts = {"5", "1 2 3", "7 7 7 7 7", "0", "9 3"};
  {
    std::ofstream out(file("prompts.txt"));
    for (const std::string& p : prompts) out << p << "\n\n";  // blank lines are skipped
  }
  const std::vector<std::string> base = {model, "generate", "--weights", file("w.safetensors"),
                                         "--max-new-tokens", "3"};
  SplitResult batch = run(with(base, {"--prompts", file("prompts.txt"), "--quiet"}));
  ASSERT_EQ(batch.code, 0) << batch.err;
  std::istringstream lines(batch.out);
  std::string line;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(std::getline(lines, line)) << batch.out;
    SplitResult alone = run(with(base, {"--prompt-tokens", prompts[i], "--quiet"}));
    ASSERT_EQ(alone.code, 0) << alone.err;
    std::string ids = alone.out.substr(0, alone.out.find('\n'));
    for (char& c : ids) c = c == ' ' ? ',' : c;
    std::string want = "\"tokens\": [" + ids + "]";
    for (size_t at = want.find(','); at != std::string::npos; at = want.find(',', at + 2)) {
      want.insert(at + 1, " ");
    }
    EXPECT_TRUE(contains(line, "{\"request\": " + std::to_string(i + 1) + ",")) << line;
    EXPECT_TRUE(contains(line, want)) << line << "\nexpected " << want;
  }
  SplitResult stats = run(with(base, {"--prompts", file("prompts.txt")}));
  EXPECT_TRUE(contains(stats.err, "5 requests over 2 rows (continuous batching)")) << stats.err;
  EXPECT_TRUE(contains(stats.err, "time to first token")) << stats.err;

  std::ofstream(file("bad.txt")) << "1 2\n3 x\n";
  expectError(with(base, {"--prompts", file("bad.txt")}), 1, "bad.txt: line 2: 'x' is not a token id");
  std::ofstream(file("blank.txt")) << "\n  \n";
  expectError(with(base, {"--prompts", file("blank.txt")}), 1, "no prompts");
  expectError(with(base, {"--prompts", file("none.txt")}), 1, "none.txt: cannot open");
  std::ofstream(file("big.txt")) << "1 99\n";
  expectError(with(base, {"--prompts", file("big.txt")}), 1, "prompt 1: prompt token 99");
  expectError(with(base, {"--prompts", file("prompts.txt"), "--prompt-tokens", "1"}), 2,
              "give one of --prompt-tokens, --prompt and --prompts");
  // A model without generation entries (a G = 1 gpt2: test/e2e/generate.test).
  expectError({kModel, "generate", "--prompts", file("prompts.txt"), "--max-new-tokens", "2"}, 1,
              "cannot generate");
}

// tfc-run serve's command line (the server itself: test/e2e/serve.test).
TEST_F(GenerateTest, ServeUsageErrors) {
  SplitResult help = run({"serve", "--help"});
  EXPECT_EQ(help.code, 0);
  for (const char* part : {"/v1/completions", "/v1/chat/completions", "/metrics", "--api-key",
                           "--max-queue", "SIGTERM", "examples:"}) {
    EXPECT_TRUE(contains(help.out, part)) << part;
  }
  const std::string model = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_train.so";
  expectError({model, "serve"}, 2, "missing --tokenizer DIR");
  expectError({model, "serve", "--tokenizer", "bytes", "--port", "70000"}, 2,
              "--port '70000' must be an integer in [0, 65535]");
  expectError({model, "serve", "--tokenizer", "bytes", "--chat-template", "jinja"}, 1,
              "--chat-template 'jinja' is not one of");
  expectError({model, "serve", "--tokenizer", "bytes"}, 2, "missing --weights");
  ASSERT_EQ(run({kModel, "init", "-o", file("m.safetensors")}).code, 0);
  expectError({kModel, "serve", "--tokenizer", "bytes", "--weights", file("m.safetensors")}, 1,
              "gen_batch");
}

// A tokenizer.json whose post-processor puts <s> (id 1) first, as LLaMA's do: a text prompt
// starts with it. 16 tokens, the fake model's vocabulary.
TEST_F(GenerateTest, TokenizerJsonPutsItsBosFirst) {
  const std::string model = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_train.so";
  ASSERT_EQ(run({model, "init", "-o", file("w.safetensors")}).code, 0);
  std::string vocab =
      R"({"<unk>": 0, "<s>": 1, "</s>": 2, "\u2581": 3, "a": 4, "b": 5, "\u2581a": 6)";
  for (int id = 7; id < 16; ++id) {
    vocab += ", \"" + std::string(1, static_cast<char>('c' + id - 7)) + "\": " + std::to_string(id);
  }
  vocab += "}";
  std::ofstream(file("tokenizer.json"))
      << (std::string(R"({"added_tokens": [{"id": 1, "content": "<s>", "special": true},
                                 {"id": 2, "content": "</s>", "special": true}],
                "normalizer": {"type": "Sequence", "normalizers": [
                  {"type": "Prepend", "prepend": "\u2581"},
                  {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
                "pre_tokenizer": null,
                "post_processor": {"type": "TemplateProcessing",
                  "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                             {"Sequence": {"id": "A", "type_id": 0}}],
                  "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
                "decoder": {"type": "Sequence", "decoders": [
                  {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                  {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
                "model": {"type": "BPE", "unk_token": "<unk>", "vocab": )" +
                      vocab + R"(, "merges": ["\u2581 a"]}})"));
  const std::vector<std::string> base = {
      model, "generate",    "--weights", file("w.safetensors"), "--max-new-tokens",
      "3",   "--tokenizer", dir_};
  SplitResult text = run(with(base, {"--prompt", "a"}));
  SplitResult ids = run(with(base, {"--prompt-tokens", "1 6"}));  // <s> "\u2581a"
  ASSERT_EQ(text.code, 0) << text.err;
  ASSERT_EQ(ids.code, 0) << ids.err;
  EXPECT_EQ(text.out, ids.out);
  // The bigram model's output depends on the last token only: the prompt's length shows.
  EXPECT_TRUE(contains(text.err, "tfc-run: prefill       2 tokens in")) << text.err;
}

TEST_F(GenerateTest, ModelsThatCannotGenerate) {
  // The fake model has forward and decode but no prefill or sample, and is not an encdec.
  SplitResult result = run(with({kModel, "generate", "--weights", file("w.safetensors")}, kPrompt));
  EXPECT_EQ(result.code, 1) << result.err;
  EXPECT_TRUE(contains(result.err, "cannot generate: it has no prefill, sample entries"))
      << result.err;
  EXPECT_TRUE(contains(result.err, "its entries: forward, decode")) << result.err;
  EXPECT_EQ(result.out, "");
  expectError(with({file("missing.so"), "generate"}, kPrompt), 1, "missing.so");
  expectError(with({std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_plain_library.so", "generate"},
                   kPrompt),
              1, "fake_plain_library.so");
}

}  // namespace
