// The parallel layouts an artifact's metadata describes (metadata.hpp): the process mesh and
// the pipeline's owners and holders, and the errors for metadata that does not make one.
#include "tfc/runtime/metadata.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tfc {
namespace {

TEST(ProcessMesh, ComesFromTheSizesInTheMetadata) {
  auto mesh = processMesh(R"({"world_size": 8, "tp_size": 2, "pp_size": 2, "model": "gpt2"})");
  ASSERT_TRUE(mesh.ok()) << mesh.status().message();
  EXPECT_EQ(*mesh, (ProcessMesh{2, 2, 2}));
  // World rank 5 = (d x 2 + s) x 2 + t with d = 1, s = 0, t = 1.
  EXPECT_EQ(mesh->stageOf(5), 0);
  EXPECT_EQ(mesh->sliceOf(5), 1);
  EXPECT_EQ(mesh->stageOf(6), 1);

  auto none = processMesh(R"({"model": "gpt2"})");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, (ProcessMesh{1, 1, 1}));
  auto tensorOnly = processMesh(R"({"world_size": 2, "tp_size": 2})");
  ASSERT_TRUE(tensorOnly.ok());
  EXPECT_EQ(*tensorOnly, (ProcessMesh{1, 1, 2}));

  // A world that the stages and slices do not divide.
  auto bad = processMesh(R"({"world_size": 6, "tp_size": 4})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("a world of 6 processes"),
            std::string::npos)
      << bad.status().message();
}

TEST(PipelineLayout, ReadsOwnersAndHolders) {
  auto layout = pipelineLayout(
      R"({"pp_size": 2, "pp_owner": {"wte": 0, "h.1.w": 1}, "pp_held": {"wte": [0, 1], )"
      R"("h.1.w": [1], "kv.0.k": [0]}, "world_size": 2})");
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(layout->size, 2);
  EXPECT_EQ(layout->owner.at("h.1.w"), 1);
  EXPECT_TRUE(layout->holds("wte", 0));
  EXPECT_TRUE(layout->holds("wte", 1));
  EXPECT_FALSE(layout->holds("h.1.w", 0));
  EXPECT_TRUE(layout->holds("h.1.w", 1));
  EXPECT_FALSE(layout->holds("kv.0.k", 1));
  EXPECT_TRUE(layout->holds("train.step", 1));  // not listed: every stage's
  EXPECT_EQ(layout->entryOf("train_step", 1), "train_step.stage1");

  // Artifacts from before per-stage storage: every stage holds everything.
  auto old = pipelineLayout(R"({"pp_size": 2, "pp_owner": {"w": 1}})");
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->holds("w", 0));
}

TEST(PipelineLayout, RefusesHoldersOutsideTheStages) {
  for (const char* json :
       {R"({"pp_size": 2, "pp_owner": {}, "pp_held": {"w": [2]}})",
        R"({"pp_size": 2, "pp_owner": {}, "pp_held": {"w": 1}})",
        R"({"pp_size": 2, "pp_owner": {}, "pp_held": [1]})",
        R"({"pp_size": 2, "pp_owner": {"w": -1}})"}) {
    auto layout = pipelineLayout(json);
    EXPECT_FALSE(layout.ok()) << json;
  }
}

}  // namespace
}  // namespace tfc
