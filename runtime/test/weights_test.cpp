// tfc::loadWeights (weights.hpp) on the fake bigram training model: a training checkpoint's
// parameters are taken and its state skipped with a note, or refused when the caller takes
// no checkpoint; another model's checkpoint is refused; plain weights load without notes.
// Hugging Face checkpoints are pretrained_load_test's (the loader forwards them), and the
// notes' text is checked end to end by test/Tools/tfc-run/{checkpoint,hf}-weights.test.
#include "tfc/runtime/weights.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_artifacts.hpp"
#include "test_util.hpp"
#include "tfc/runtime/checkpoint.hpp"
#include "tfc/runtime/runtime.hpp"

namespace tfc {
namespace {

using testing::TempDir;

// Every parameter's bytes, in order.
std::vector<std::string> paramBytes(const Artifact& artifact, const Params& params) {
  std::vector<std::string> all;
  for (int32_t i = 0; i < artifact.paramCount(); ++i) {
    tfc_tensor_ref_t ref = *params.tensor(i);
    all.emplace_back(static_cast<const char*>(ref.data), ref.byte_size);
  }
  return all;
}

class WeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto artifact = Artifact::open(testing::fakeArtifact("fake_train"));
    ASSERT_OK(artifact);
    artifact_ = *artifact;
    auto params = Params::create(artifact_);
    ASSERT_OK(params);
    ASSERT_OK(params->init(3));
    auto context = Context::create(artifact_, *params);
    ASSERT_OK(context);
    ASSERT_GT(artifact_.stateCount(), 0);
    checkpoint_ = dir_.file("ck.safetensors");
    ASSERT_OK(saveCheckpoint(checkpoint_, artifact_, *params, *context, {}));
    saved_ = paramBytes(artifact_, *params);
  }

  // Fresh parameters, initialized from another seed than the saved ones.
  Params freshParams() {
    Params params = *Params::create(artifact_);
    EXPECT_OK(params.init(4));
    EXPECT_NE(paramBytes(artifact_, params), saved_);
    return params;
  }

  TempDir dir_;
  Artifact artifact_;
  std::string checkpoint_;
  std::vector<std::string> saved_;
};

TEST_F(WeightsTest, TakesACheckpointsParametersAndNotesTheSkippedState) {
  for (WeightsMemory memory : {WeightsMemory::kCopied, WeightsMemory::kMapped}) {
    Params params = freshParams();
    WeightsLoadOptions options;
    options.memory = memory;
    auto notes = loadWeights(checkpoint_, params, options);
    ASSERT_OK(notes);
    EXPECT_EQ(paramBytes(artifact_, params), saved_);
    ASSERT_EQ(notes->size(), 1u);
    EXPECT_EQ((*notes)[0], checkpoint_ + " is a training checkpoint: taking its " +
                               std::to_string(artifact_.paramCount()) +
                               " parameters, ignoring its " +
                               std::to_string(artifact_.stateCount()) +
                               " state tensors (optimizer moments, step)");
  }
}

TEST_F(WeightsTest, RefusesACheckpointWhenTheCallerTakesNone) {
  Params params = freshParams();
  std::vector<std::string> before = paramBytes(artifact_, params);
  WeightsLoadOptions options;
  options.acceptCheckpoint = false;
  auto notes = loadWeights(checkpoint_, params, options);
  ASSERT_FALSE(notes.ok());
  EXPECT_NE(std::string(notes.status().message()).find("'state."), std::string::npos)
      << notes.status().message();
  EXPECT_EQ(paramBytes(artifact_, params), before);
}

TEST_F(WeightsTest, RefusesAnotherModelsCheckpointNamingBothHashes) {
  auto other = Artifact::open(testing::fakeArtifact("fake_train_other"));
  ASSERT_OK(other);
  Params params = *Params::create(*other);
  auto notes = loadWeights(checkpoint_, params);
  ASSERT_FALSE(notes.ok());
  EXPECT_EQ(notes.status().code(), TFC_FAILED_PRECONDITION);
  std::string message = notes.status().message();
  EXPECT_NE(message.find(std::string(artifact_.moduleHash().substr(0, 16))), std::string::npos) << message;
  EXPECT_NE(message.find(std::string(other->moduleHash().substr(0, 16))), std::string::npos) << message;
}

TEST_F(WeightsTest, LoadsPlainWeightsWithoutNotes) {
  Params source = *Params::create(artifact_);
  ASSERT_OK(source.init(3));
  const std::string plain = dir_.file("plain.safetensors");
  ASSERT_OK(source.saveSafetensors(plain));
  for (bool acceptCheckpoint : {true, false}) {
    Params params = freshParams();
    WeightsLoadOptions options;
    options.acceptCheckpoint = acceptCheckpoint;
    auto notes = loadWeights(plain, params, options);
    ASSERT_OK(notes);
    EXPECT_TRUE(notes->empty());
    EXPECT_EQ(paramBytes(artifact_, params), saved_);
  }
}

TEST_F(WeightsTest, ADirectoryOrAnIndexIsAHuggingFaceCheckpoint) {
  EXPECT_TRUE(isPretrainedCheckpoint(dir_.path()));
  EXPECT_TRUE(isPretrainedCheckpoint(dir_.file("model.safetensors.index.json")));
  EXPECT_FALSE(isPretrainedCheckpoint(checkpoint_));
}

}  // namespace
}  // namespace tfc
