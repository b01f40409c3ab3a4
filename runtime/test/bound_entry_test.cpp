// tfc::BoundEntry on the fake bigram model (fake_train_artifact.c): buffers bound once,
// lookup by name, the signature check and its message, inputs replaced or borrowed.
#include "tfc/runtime/bound_entry.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "fake_artifacts.hpp"
#include "tfc/runtime/runtime.hpp"

namespace tfc {
namespace {

class BoundEntryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    artifact_ = *Artifact::open(testing::fakeArtifact("fake_train"));
    params_ = *Params::create(artifact_);
    ASSERT_TRUE(params_.init(3).ok());
    context_ = *Context::create(artifact_, params_);
  }

  Artifact artifact_;
  Params params_;
  Context context_;
};

bool contains(const Status& status, const std::string& text) {
  return std::string(status.message()).find(text) != std::string::npos;
}

TEST_F(BoundEntryTest, BindsZeroedBuffersOfTheEntrysShapesAndCallsOnThem) {
  auto bound = BoundEntry::create(artifact_, "decode");
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  EXPECT_EQ(bound->name(), "decode");
  EXPECT_EQ(bound->signature(), "decode(token I32[2, 1], pos I32[]) -> (logits F32[2, 16])");
  ASSERT_EQ(bound->numInputs(), 2u);
  EXPECT_EQ(bound->findInput("pos"), std::optional<size_t>(1));
  EXPECT_EQ(bound->findInput("nope"), std::nullopt);
  EXPECT_EQ(bound->findOutput("logits"), std::optional<size_t>(0));
  EXPECT_EQ(bound->input("token").shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(bound->input("token").dataAs<int32_t>()[1], 0);

  bound->input("token").mutableDataAs<int32_t>()[0] = 5;
  bound->input("token").mutableDataAs<int32_t>()[1] = 6;
  *bound->input("pos").mutableDataAs<int32_t>() = 2;
  BoundEntry moved = std::move(bound).value();  // the buffers stay where the refs point
  ASSERT_TRUE(moved.call(context_).ok());
  // The bigram's logits: wte[token, :] + bias, row by row.
  const float* wte = static_cast<const float*>(params_.tensor(0)->data);
  const float* bias = static_cast<const float*>(params_.tensor(1)->data);
  const float* logits = moved.output("logits").dataAs<float>();
  for (int v = 0; v < 16; ++v) {
    EXPECT_EQ(logits[v], wte[5 * 16 + v] + bias[v]);
    EXPECT_EQ(logits[16 + v], wte[6 * 16 + v] + bias[v]);
  }
}

TEST_F(BoundEntryTest, ChecksAnExpectedSignatureAndShowsBoth) {
  auto good = BoundEntry::create(artifact_, "decode",
                                 {{"pos", TFC_DTYPE_I32, 0}, {"token", TFC_DTYPE_I32, 2}},
                                 {{"logits", TFC_DTYPE_F32, 2}}, "a test");
  EXPECT_TRUE(good.ok()) << good.status().message();
  auto bad = BoundEntry::create(artifact_, "decode", {{"token", TFC_DTYPE_I32, 1}},
                                {{"logits", TFC_DTYPE_F32, 2}}, "a test");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), TFC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(bad.status(),
                       "entry 'decode' does not have the signature a test needs: it is "
                       "decode(token I32[2, 1], pos I32[]) -> (logits F32[2, 16]), a test "
                       "expects decode(token I32 rank 1) -> (logits F32 rank 2)"))
      << bad.status().message();
  auto wrongDtype = BoundEntry::create(artifact_, "decode",
                                       {{"pos", TFC_DTYPE_I64, 0}, {"token", TFC_DTYPE_I32, 2}},
                                       {{"logits", TFC_DTYPE_F32, 2}}, "a test");
  EXPECT_FALSE(wrongDtype.ok());
  auto missing = BoundEntry::create(artifact_, "no_such_entry");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.status(), "no_such_entry")) << missing.status().message();
}

TEST_F(BoundEntryTest, ReplacesAndBorrowsInputs) {
  auto bound = BoundEntry::create(artifact_, "decode");
  ASSERT_TRUE(bound.ok());
  auto wrong = HostTensor::allocate(TFC_DTYPE_I32, {1, 1});
  Status status = bound->setInput(0, std::move(wrong).value());
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(
      contains(status, "entry 'decode' input 'token' is I32[2, 1]; the value given is I32[1, 1]"))
      << status.message();
  EXPECT_FALSE(bound->setInput(7, HostTensor()).ok());
  auto token = HostTensor::allocate(TFC_DTYPE_I32, {2, 1});
  token->mutableDataAs<int32_t>()[0] = token->mutableDataAs<int32_t>()[1] = 9;
  ASSERT_TRUE(bound->setInput(0, std::move(token).value()).ok());
  ASSERT_TRUE(bound->call(context_).ok());
  std::vector<float> fromOwned(bound->output(0).dataAs<float>(),
                               bound->output(0).dataAs<float>() + 32);

  // Borrowed inputs: the caller's memory, checked by the call itself.
  auto borrowed = BoundEntry::create(artifact_, "decode", BoundEntry::Inputs::kCallerProvided);
  ASSERT_TRUE(borrowed.ok());
  EXPECT_FALSE(borrowed->call(context_).ok());  // no inputs given yet
  auto caller = HostTensor::allocate(TFC_DTYPE_I32, {2, 1});
  caller->mutableDataAs<int32_t>()[0] = caller->mutableDataAs<int32_t>()[1] = 9;
  auto pos = HostTensor::allocate(TFC_DTYPE_I32, {});
  *pos->mutableDataAs<int32_t>() = 0;
  std::vector<TensorView> views = {caller->view(), pos->view()};
  borrowed->useInputs(views);
  ASSERT_TRUE(borrowed->call(context_).ok());
  EXPECT_EQ(std::vector<float>(borrowed->output(0).dataAs<float>(),
                               borrowed->output(0).dataAs<float>() + 32),
            fromOwned);

  // Context::call (allocating) binds the same way.
  auto outputs = context_.call("decode", views);
  ASSERT_TRUE(outputs.ok()) << outputs.status().message();
  EXPECT_EQ(std::vector<float>((*outputs)[0].dataAs<float>(), (*outputs)[0].dataAs<float>() + 32),
            fromOwned);
  EXPECT_FALSE(context_.call("decode", {caller->view()}).ok());  // one input short
}

// Issue 29: prefill's n and the KV-cache position are checked by the library, so that every
// caller (Python's Context.call, the C API, BoundEntry) gets a message naming them instead
// of a clamped n or "embedding: id out of range" (fake_train: n_ctx 8, chunk P 4).
TEST_F(BoundEntryTest, CacheInputsOutsideTheContextAreRefusedByName) {
  auto prefill = BoundEntry::create(artifact_, "prefill");
  ASSERT_TRUE(prefill.ok()) << prefill.status().message();
  auto setPrefill = [&](int32_t pos, int32_t n) {
    *prefill->input("pos").mutableDataAs<int32_t>() = pos;
    *prefill->input("n").mutableDataAs<int32_t>() = n;
    return prefill->call(context_);
  };
  EXPECT_TRUE(setPrefill(0, 4).ok());
  EXPECT_TRUE(setPrefill(4, 1).ok());
  for (int32_t n : {0, -3, 5, 1000000, INT32_MIN}) {
    Status status = setPrefill(0, n);
    SCOPED_TRACE(n);
    EXPECT_EQ(status.code(), TFC_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(status, "entry 'prefill': n = " + std::to_string(n) +
                                     " is out of range"))
        << status.message();
    EXPECT_TRUE(contains(status, "1 to 4")) << status.message();
  }
  Status past = setPrefill(5, 4);
  EXPECT_EQ(past.code(), TFC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(past, "position 5 + 4 tokens exceeds the context")) << past.message();
  EXPECT_TRUE(contains(past, "(n_ctx) is 8, so pos is at most 4")) << past.message();
  EXPECT_FALSE(contains(past, "embedding")) << past.message();
  Status negative = setPrefill(-1, 4);
  EXPECT_TRUE(contains(negative, "pos = -1 is not a position in the KV cache"))
      << negative.message();

  auto decode = BoundEntry::create(artifact_, "decode");
  ASSERT_TRUE(decode.ok());
  *decode->input("pos").mutableDataAs<int32_t>() = 7;
  EXPECT_TRUE(decode->call(context_).ok());
  *decode->input("pos").mutableDataAs<int32_t>() = 8;
  Status full = decode->call(context_);
  EXPECT_TRUE(contains(full, "entry 'decode': position 8 + 1 token exceeds the context"))
      << full.message();
}

}  // namespace
}  // namespace tfc
