// tfc::Generator and its C API on the fake bigram model (fake_train_artifact.c: n_ctx 8,
// prefill chunk 4, batch 2, vocabulary 16), checked against values computed apart from the
// generator: the bigram's argmax chain from the parameters, and the entries called by hand.
#include "tfc/runtime/generator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fake_artifacts.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/tokenizer.hpp"

namespace tfc {
namespace {

constexpr int32_t kVocab = 16;

class GeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto artifact = Artifact::open(testing::fakeArtifact("fake_train"));
    ASSERT_TRUE(artifact.ok()) << artifact.status().message();
    artifact_ = *artifact;
    auto params = Params::create(artifact_);
    ASSERT_TRUE(params.ok()) << params.status().message();
    params_ = *params;
    ASSERT_TRUE(params_.init(7).ok());
    auto context = Context::create(artifact_, params_);
    ASSERT_TRUE(context.ok()) << context.status().message();
    context_ = *context;
  }

  // The bigram's logits after |token|: wte[token, :] + bias, from the parameters.
  std::vector<float> logitsAfter(int32_t token) const {
    const float* wte = static_cast<const float*>(params_.tensor(0)->data);
    const float* bias = static_cast<const float*>(params_.tensor(1)->data);
    std::vector<float> logits(kVocab);
    for (int v = 0; v < kVocab; ++v) logits[v] = wte[token * kVocab + v] + bias[v];
    return logits;
  }

  int32_t argmaxAfter(int32_t token) const {
    std::vector<float> logits = logitsAfter(token);
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }

  Generator makeGenerator() {
    auto generator = Generator::create(context_);
    EXPECT_TRUE(generator.ok()) << generator.status().message();
    return std::move(generator).value();
  }

  Artifact artifact_;
  Params params_;
  Context context_;
};

std::vector<int32_t> collect(Generator& generator, const std::vector<int32_t>& prompt,
                             const GenerationOptions& options, GenerationStats* stats = nullptr) {
  std::vector<int32_t> ids;
  auto result = generator.generate(prompt, options, [&](int32_t id, std::string_view) {
    ids.push_back(id);
    return true;
  });
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (result.ok() && stats != nullptr) *stats = *result;
  return ids;
}

TEST_F(GeneratorTest, ReadsTheModelsShapes) {
  Generator generator = makeGenerator();
  EXPECT_EQ(generator.batch(), 2);
  EXPECT_EQ(generator.prefillChunk(), 4);
  EXPECT_EQ(generator.vocabSize(), kVocab);
  EXPECT_EQ(generator.contextLength(), 8);
  EXPECT_EQ(generator.modelName(), "fake-bigram");
}

// Greedy generation of a bigram model is the argmax chain from the prompt's last token.
TEST_F(GeneratorTest, GreedyTokensAreTheBigramsArgmaxChain) {
  Generator generator = makeGenerator();
  GenerationOptions options;
  options.maxNewTokens = 5;
  GenerationStats stats;
  std::vector<int32_t> ids = collect(generator, {3, 5, 1}, options, &stats);
  std::vector<int32_t> expected;
  int32_t last = 1;
  for (int i = 0; i < 5; ++i) expected.push_back(last = argmaxAfter(last));
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(stats.stopReason, StopReason::kMaxNewTokens);
  EXPECT_EQ(stats.promptTokens, 3);
  EXPECT_EQ(stats.generatedTokens, 5);
  EXPECT_EQ(stats.prefillCalls, 1);
  EXPECT_EQ(stats.decodeCalls, 4);  // no decode after the last token
  EXPECT_EQ(stats.sampleCalls, 5);
}

// Sampling: the same tokens as prefill, sample (seed S + i at step i) and decode called by
// hand through Context::call.
TEST_F(GeneratorTest, SampledTokensEqualTheEntriesCalledByHand) {
  const std::vector<int32_t> prompt = {2, 9, 4, 4, 7};  // two prefill chunks
  const int64_t seed = 11;
  const float temperature = 1.5f;
  Generator generator = makeGenerator();
  GenerationOptions options;
  options.maxNewTokens = 3;
  options.sampling.temperature = temperature;
  options.sampling.seed = seed;
  GenerationStats stats;
  std::vector<int32_t> ids = collect(generator, prompt, options, &stats);
  EXPECT_EQ(stats.prefillCalls, 2);

  auto scalar = [](tfc_dtype_t dtype, const void* value) {
    auto tensor = HostTensor::allocate(dtype, {});
    std::memcpy(tensor->mutableData(), value, tensor->byteSize());
    return std::move(tensor).value();
  };
  // Prefill: chunks at 0 (4 tokens) and at min(4, n_ctx - P) = 4 (1 token, padded with 0s).
  auto tokens = HostTensor::allocate(TFC_DTYPE_I32, {2, 4});
  HostTensor logits;
  for (int32_t at : {0, 4}) {
    int32_t n = std::min<int32_t>(4, static_cast<int32_t>(prompt.size()) - at);
    for (int b = 0; b < 2; ++b) {
      for (int j = 0; j < 4; ++j)
        tokens->mutableDataAs<int32_t>()[b * 4 + j] = j < n ? prompt[at + j] : 0;
    }
    HostTensor pos = scalar(TFC_DTYPE_I32, &at), count = scalar(TFC_DTYPE_I32, &n);
    auto out = context_.call("prefill", {tokens->view(), pos.view(), count.view()});
    ASSERT_TRUE(out.ok()) << out.status().message();
    logits = std::move((*out)[0]);
  }
  std::vector<int32_t> expected;
  for (int64_t step = 0; step < 3; ++step) {
    int32_t topK = 0;
    float topP = 1.0f;
    int64_t stepSeed = seed + step;
    HostTensor t = scalar(TFC_DTYPE_F32, &temperature), k = scalar(TFC_DTYPE_I32, &topK),
               p = scalar(TFC_DTYPE_F32, &topP), s = scalar(TFC_DTYPE_I64, &stepSeed);
    auto sampled = context_.call("sample", {logits.view(), t.view(), k.view(), p.view(), s.view()});
    ASSERT_TRUE(sampled.ok()) << sampled.status().message();
    int32_t id = (*sampled)[0].dataAs<int32_t>()[0];
    expected.push_back(id);
    auto token = HostTensor::allocate(TFC_DTYPE_I32, {2, 1});
    token->mutableDataAs<int32_t>()[0] = token->mutableDataAs<int32_t>()[1] = id;
    int32_t pos = static_cast<int32_t>(prompt.size() + step);
    HostTensor posTensor = scalar(TFC_DTYPE_I32, &pos);
    auto decoded = context_.call("decode", {token->view(), posTensor.view()});
    ASSERT_TRUE(decoded.ok()) << decoded.status().message();
    logits = std::move((*decoded)[0]);
  }
  EXPECT_EQ(ids, expected);
  // Another seed gives other tokens (the fake's noise depends on it), the same seed the same.
  EXPECT_EQ(collect(generator, prompt, options), expected);
  options.sampling.seed = seed + 100;
  std::vector<std::vector<int32_t>> others;
  for (int i = 0; i < 4; ++i, ++options.sampling.seed)
    others.push_back(collect(generator, prompt, options));
  EXPECT_TRUE(
      std::any_of(others.begin(), others.end(), [&](const auto& o) { return o != expected; }));
}

TEST_F(GeneratorTest, StopsAtTheContextLimitAStopTokenAndTheCallback) {
  Generator generator = makeGenerator();
  GenerationOptions options;
  options.maxNewTokens = 10;
  GenerationStats stats;
  // n_ctx 8 and a prompt of 6: tokens go to positions 6 and 7, the third has no room.
  EXPECT_EQ(collect(generator, {1, 2, 3, 4, 5, 6}, options, &stats).size(), 3u);
  EXPECT_EQ(stats.stopReason, StopReason::kContextLimit);

  const int32_t first = argmaxAfter(6);
  options.stopTokens = {first};
  EXPECT_EQ(collect(generator, {6}, options, &stats), std::vector<int32_t>{first});
  EXPECT_EQ(stats.stopReason, StopReason::kStopToken);

  options.stopTokens.clear();
  int calls = 0;
  auto result =
      generator.generate({6}, options, [&](int32_t, std::string_view) { return ++calls < 2; });
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(result->generatedTokens, 2);
  EXPECT_EQ(result->stopReason, StopReason::kCallback);
}

TEST_F(GeneratorTest, StreamsBytesAndTakesTextWithATokenizer) {
  Generator generator = makeGenerator();
  auto tokenizer = Tokenizer::load("bytes");
  ASSERT_TRUE(tokenizer.ok());
  generator.setTokenizer(std::move(tokenizer).value());
  GenerationOptions options;
  options.maxNewTokens = 3;
  std::string text, expected;
  // "\x05" is token 5.
  auto result = generator.generateText("\x05", options, [&](int32_t id, std::string_view bytes) {
    text += bytes;
    expected += static_cast<char>(id);
    return true;
  });
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(text, expected);
  EXPECT_EQ(expected[0], static_cast<char>(argmaxAfter(5)));
}

// The byte tokenizer with a BOS token (as LLaMA's tokenizer.json has <s>).
class ByteTokenizerWithBos final : public Tokenizer {
 public:
  std::string_view kind() const override { return "bytes+bos"; }
  std::vector<int32_t> encode(std::string_view text) const override { return bytes_.encode(text); }
  using Tokenizer::decode;
  StatusOr<std::string> decode(const int32_t* ids, size_t count) const override {
    return bytes_.decode(ids, count);
  }
  int32_t vocabSize() const override { return bytes_.vocabSize(); }
  std::optional<int32_t> eosId() const override { return std::nullopt; }
  std::optional<int32_t> bosId() const override { return 7; }
  size_t nextSplit(std::string_view text, size_t from) const override {
    return bytes_.nextSplit(text, from);
  }

 private:
  ByteTokenizer bytes_;
};

TEST_F(GeneratorTest, TextPromptsStartWithTheTokenizersBos) {
  Generator generator = makeGenerator();
  generator.setTokenizer(std::make_shared<ByteTokenizerWithBos>());
  GenerationOptions options;
  options.maxNewTokens = 1;
  int32_t first = -1;
  auto result = generator.generateText("\x05", options, [&](int32_t id, std::string_view) {
    first = id;
    return true;
  });
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->promptTokens, 2);  // 7, 5
  EXPECT_EQ(first, argmaxAfter(5));
}

TEST_F(GeneratorTest, RefusesBadPromptsAndModelsThatCannotGenerate) {
  Generator generator = makeGenerator();
  GenerationOptions options;
  auto expectError = [&](const std::vector<int32_t>& prompt, const std::string& message) {
    auto result = generator.generate(prompt, options, nullptr);
    ASSERT_FALSE(result.ok());
    EXPECT_NE(std::string(result.status().message()).find(message), std::string::npos)
        << result.status().message();
  };
  expectError({}, "the prompt is empty");
  expectError({1, 16}, "prompt token 16 (at position 1) is out of range");
  expectError({1, 2, 3, 4, 5, 6, 7, 8, 9}, "more than the model's context of 8");
  options.maxNewTokens = 0;
  expectError({1}, "give at least 1");
  EXPECT_FALSE(generator.generateText("x", GenerationOptions{}, nullptr).ok());  // no tokenizer

  auto artifact = Artifact::open(testing::fakeArtifact("fake_model"));
  ASSERT_TRUE(artifact.ok());
  auto params = Params::create(*artifact);
  ASSERT_TRUE(params.ok());
  auto context = Context::create(*artifact, *params);
  ASSERT_TRUE(context.ok());
  auto none = Generator::create(*context);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(std::string(none.status().message()).find("prefill"), std::string::npos)
      << none.status().message();
}

// The C API generates what the C++ API does.
struct Collected {
  std::vector<int32_t> ids;
  std::string bytes;
  int stopAfter = 1000;
};

bool onToken(void* user, int32_t id, const char* bytes, size_t size) {
  auto* collected = static_cast<Collected*>(user);
  collected->ids.push_back(id);
  if (bytes != nullptr) collected->bytes.append(bytes, size);
  return static_cast<int>(collected->ids.size()) < collected->stopAfter;
}

TEST_F(GeneratorTest, CApiGeneratesWhatTheCppApiDoes) {
  Generator generator = makeGenerator();
  GenerationOptions options;
  options.maxNewTokens = 4;
  options.sampling.temperature = 0.7;
  options.sampling.seed = 3;
  const std::vector<int32_t> prompt = {4, 2};
  std::vector<int32_t> expected = collect(generator, prompt, options);

  tfc_generator_options_t generatorOptions;
  tfc_generator_options_initialize(&generatorOptions);
  generatorOptions.tokenizer = "bytes";
  tfc_generator_t* raw = nullptr;
  Status status(tfc_generator_create(context_.get(), &generatorOptions, &raw));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(tfc_generator_batch(raw), 2);
  EXPECT_EQ(tfc_generator_prefill_chunk(raw), 4);
  EXPECT_EQ(tfc_generator_vocab_size(raw), kVocab);
  EXPECT_EQ(tfc_generator_context_length(raw), 8);
  tfc_generate_options_t c;
  tfc_generate_options_initialize(&c);
  EXPECT_EQ(c.max_new_tokens, 16);
  EXPECT_EQ(c.temperature, 0.0f);
  EXPECT_EQ(c.top_p, 1.0f);
  EXPECT_TRUE(c.stop_at_end_of_text);
  c.max_new_tokens = 4;
  c.temperature = 0.7f;
  c.seed = 3;
  Collected collected;
  tfc_generate_stats_t stats{};
  status = Status(
      tfc_generator_generate(raw, prompt.data(), prompt.size(), &c, onToken, &collected, &stats));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(collected.ids, expected);
  EXPECT_EQ(collected.bytes.size(), expected.size());  // the byte tokenizer: one byte each
  EXPECT_EQ(stats.generated_tokens, 4);
  EXPECT_EQ(stats.prompt_tokens, 2);
  EXPECT_EQ(stats.stop_reason, TFC_STOP_MAX_NEW_TOKENS);

  // A text prompt, a stop from the callback, and an error as a status.
  Collected stopped;
  stopped.stopAfter = 2;
  status = Status(tfc_generator_generate_text(raw, "\x04\x02", 2, &c, onToken, &stopped, &stats));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(stopped.ids, std::vector<int32_t>(expected.begin(), expected.begin() + 2));
  EXPECT_EQ(stats.stop_reason, TFC_STOP_CALLBACK);
  const int32_t bad = 99;
  status = Status(tfc_generator_generate(raw, &bad, 1, nullptr, nullptr, nullptr, nullptr));
  EXPECT_FALSE(status.ok());
  tfc_generator_destroy(raw);
}

}  // namespace
}  // namespace tfc
