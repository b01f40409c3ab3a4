// tfc::BatchedGenerator and its C API on the fake bigram model (fake_train_artifact.c: 2
// generation rows, n_ctx 8, prefill chunk 4, vocabulary 16, with the serving entries
// decode_rows and prefill_row): every request gets what tfc::Generator gives it alone,
// whatever runs beside it; queueing, cancelling, stopping and the C API.
#include "tfc/runtime/batched_generator.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "fake_artifacts.hpp"
#include "tfc/runtime/generator.hpp"
#include "tfc/runtime/runtime.hpp"

namespace tfc {
namespace {

class BatchedGeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto artifact = Artifact::open(testing::fakeArtifact("fake_train"));
    ASSERT_TRUE(artifact.ok()) << artifact.status().message();
    auto params = Params::create(*artifact);
    ASSERT_TRUE(params.ok());
    params_ = *params;
    ASSERT_TRUE(params_.init(5).ok());
    auto context = Context::create(*artifact, params_);
    ASSERT_TRUE(context.ok()) << context.status().message();
    context_ = *context;
  }

  // What Generator gives |prompt| alone.
  std::vector<int32_t> alone(const std::vector<int32_t>& prompt, const GenerationOptions& options,
                             StopReason* reason = nullptr) {
    auto generator = Generator::create(context_);
    EXPECT_TRUE(generator.ok());
    std::vector<int32_t> ids;
    auto stats = generator->generate(prompt, options, [&](int32_t id, std::string_view) {
      ids.push_back(id);
      return true;
    });
    EXPECT_TRUE(stats.ok()) << stats.status().message();
    if (reason && stats.ok()) *reason = stats->stopReason;
    return ids;
  }

  BatchedGenerator make() {
    auto batch = BatchedGenerator::create(context_);
    EXPECT_TRUE(batch.ok()) << batch.status().message();
    return std::move(batch).value();
  }

  Params params_;
  Context context_;
};

TEST_F(BatchedGeneratorTest, EveryRequestGetsItsTokensAlone) {
  BatchedGenerator batch = make();
  EXPECT_EQ(batch.rows(), 2);
  EXPECT_EQ(batch.prefillChunk(), 4);
  EXPECT_EQ(batch.contextLength(), 8);
  // Five requests over two rows: prompts of 1 to 7 tokens (two prefill chunks, the last
  // one shifted to fit n_ctx), greedy and sampled, some ending at the context.
  const std::vector<std::vector<int32_t>> prompts = {{3}, {1, 2, 3, 4, 5}, {7, 7}, {9, 1, 2, 3, 4, 5, 6}, {0}};
  std::vector<GenerationOptions> options(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    options[i].maxNewTokens = 3 + static_cast<int64_t>(i);
    if (i % 2 == 1) {
      options[i].sampling.temperature = 0.8;
      options[i].sampling.seed = 40 + static_cast<int64_t>(i);
    }
  }
  std::map<int64_t, RequestResult> done;
  std::map<int64_t, std::vector<int32_t>> streamed;
  std::vector<int64_t> ids;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto id = batch.submit(
        prompts[i], options[i],
        [&streamed, i](int32_t token, std::string_view) {
          streamed[static_cast<int64_t>(i)].push_back(token);
          return true;
        },
        [&done, i](const RequestResult& r) { done[static_cast<int64_t>(i)] = r; });
    ASSERT_TRUE(id.ok()) << id.status().message();
    ids.push_back(*id);
  }
  EXPECT_EQ(batch.queued(), 5);
  ASSERT_TRUE(batch.runUntilIdle().ok());
  EXPECT_TRUE(batch.idle());
  ASSERT_EQ(done.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    StopReason reason;
    std::vector<int32_t> want = alone(prompts[i], options[i], &reason);
    const RequestResult& r = done[static_cast<int64_t>(i)];
    EXPECT_EQ(r.tokens, want) << "request " << i;
    EXPECT_EQ(streamed[static_cast<int64_t>(i)], want) << "request " << i;
    EXPECT_EQ(r.stopReason, reason) << "request " << i;
    EXPECT_EQ(r.id, ids[i]);
    EXPECT_EQ(r.promptTokens, static_cast<int64_t>(prompts[i].size()));
    EXPECT_TRUE(r.row == 0 || r.row == 1);
    EXPECT_GE(r.totalMs, r.firstTokenMs);
  }
  // The 7-token prompt reaches n_ctx 8 after two tokens.
  EXPECT_EQ(done[3].stopReason, StopReason::kContextLimit);
  EXPECT_EQ(done[3].tokens.size(), 2u);
  BatchedGenerator::Counters c = batch.counters();
  EXPECT_GT(c.decodeCalls, 0);
  EXPECT_GT(c.decodedTokens, c.decodeCalls);  // rows decoded together
}

TEST_F(BatchedGeneratorTest, CancelStopTokensAndCallbacks) {
  BatchedGenerator batch = make();
  GenerationOptions options;
  options.maxNewTokens = 6;
  std::vector<RequestResult> done;
  auto record = [&done](const RequestResult& r) { done.push_back(r); };
  std::vector<int32_t> full = alone({2}, options);
  ASSERT_GE(full.size(), 3u);
  // A callback that stops after 2 tokens, a stop token, and a queued request cancelled.
  int seen = 0;
  auto a = batch.submit({2}, options, [&seen](int32_t, std::string_view) { return ++seen < 2; }, record);
  GenerationOptions withStop = options;
  withStop.stopTokens = {full[1]};
  auto b = batch.submit({2}, withStop, {}, record);
  auto c = batch.submit({2}, options, {}, record);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(batch.cancel(*c));
  EXPECT_FALSE(batch.cancel(12345));
  ASSERT_TRUE(batch.runUntilIdle().ok());
  ASSERT_EQ(done.size(), 3u);
  std::map<int64_t, RequestResult> byId;
  for (const RequestResult& r : done) byId[r.id] = r;
  EXPECT_EQ(byId[*a].stopReason, StopReason::kCallback);
  EXPECT_EQ(byId[*a].tokens, std::vector<int32_t>(full.begin(), full.begin() + 2));
  EXPECT_EQ(byId[*b].stopReason, StopReason::kStopToken);
  EXPECT_EQ(byId[*b].tokens.back(), full[1]);
  EXPECT_TRUE(byId[*c].cancelled);
  EXPECT_EQ(byId[*c].row, -1);  // it never ran
  EXPECT_TRUE(byId[*c].tokens.empty());
}

TEST_F(BatchedGeneratorTest, RefusesBadRequests) {
  BatchedGenerator batch = make();
  GenerationOptions options;
  EXPECT_EQ(batch.submit({}, options, {}, {}).status().code(), TFC_INVALID_ARGUMENT);
  EXPECT_EQ(batch.submit({16}, options, {}, {}).status().code(), TFC_INVALID_ARGUMENT);
  EXPECT_EQ(batch.submit(std::vector<int32_t>(9, 1), options, {}, {}).status().code(),
            TFC_INVALID_ARGUMENT);
  options.maxNewTokens = 0;
  EXPECT_EQ(batch.submit({1}, options, {}, {}).status().code(), TFC_INVALID_ARGUMENT);
  EXPECT_TRUE(batch.idle());
}

TEST_F(BatchedGeneratorTest, ModelsWithoutServingEntriesAreRefused) {
  auto artifact = Artifact::open(testing::fakeArtifact("fake_model"));
  ASSERT_TRUE(artifact.ok());
  auto params = Params::create(*artifact);
  ASSERT_TRUE(params.ok());
  ASSERT_TRUE(params->init(1).ok());
  auto context = Context::create(*artifact, *params);
  ASSERT_TRUE(context.ok());
  auto batch = BatchedGenerator::create(*context);
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), TFC_FAILED_PRECONDITION);
  EXPECT_NE(std::string(batch.status().message()).find("gen_batch"), std::string::npos)
      << batch.status().message();
}

struct CResults {
  std::map<int64_t, std::vector<int32_t>> tokens, streamed;
};

bool onCToken(void* user, int32_t token, const char*, size_t) {
  auto* pair = static_cast<std::pair<CResults*, int64_t>*>(user);
  pair->first->streamed[pair->second].push_back(token);
  return true;
}

void onCDone(void* user, const tfc_request_result_t* r) {
  auto* pair = static_cast<std::pair<CResults*, int64_t>*>(user);
  pair->first->tokens[pair->second].assign(r->tokens, r->tokens + r->generated_tokens);
}

TEST_F(BatchedGeneratorTest, CApiRunsWhatTheCppApiDoes) {
  tfc_batched_generator_t* raw = nullptr;
  Status status(tfc_batched_generator_create(context_.get(), nullptr, &raw));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(tfc_batched_generator_rows(raw), 2);
  tfc_generate_options_t options;
  tfc_generate_options_initialize(&options);
  options.max_new_tokens = 4;
  const std::vector<std::vector<int32_t>> prompts = {{1, 2}, {5}, {4, 4, 4, 4, 4}};
  CResults results;
  std::vector<std::pair<CResults*, int64_t>> users;
  users.reserve(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    users.emplace_back(&results, static_cast<int64_t>(i));
    int64_t id = 0;
    status = Status(tfc_batched_generator_submit(raw, prompts[i].data(), prompts[i].size(),
                                                 &options, onCToken, onCDone, &users.back(), &id));
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(id, static_cast<int64_t>(i) + 1);
  }
  EXPECT_EQ(tfc_batched_generator_queued(raw), 3);
  status = Status(tfc_batched_generator_run_until_idle(raw));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(tfc_batched_generator_running(raw), 0);
  GenerationOptions cpp;
  cpp.maxNewTokens = 4;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(results.tokens[static_cast<int64_t>(i)], alone(prompts[i], cpp)) << i;
    EXPECT_EQ(results.streamed[static_cast<int64_t>(i)], results.tokens[static_cast<int64_t>(i)]);
  }
  const int32_t bad = 99;
  status = Status(tfc_batched_generator_submit(raw, &bad, 1, nullptr, nullptr, nullptr, nullptr,
                                               nullptr));
  EXPECT_EQ(status.code(), TFC_INVALID_ARGUMENT);
  tfc_batched_generator_destroy(raw);
}

}  // namespace
}  // namespace tfc
