// tfc::Trainer and its C API on the fake bigram training model (fake_train_artifact.c:
// batch 2, seq 8, vocabulary 16, AdamW), checked against values computed apart from the
// trainer: the loss entry on the sampler's batch drawn by hand, and an uninterrupted run
// against a stopped and resumed one (bit-identical parameters, state and losses).
#include "tfc/runtime/trainer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fake_artifacts.hpp"
#include "test_util.hpp"
#include "tfc/runtime/checkpoint.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/safetensors.hpp"
#include "tfc/runtime/token_data.hpp"

namespace tfc {
namespace {

// A model, its params (initialized with seed 0) and a context.
struct Model {
  Artifact artifact;
  Params params;
  Context context;

  static Model load() {
    Model model;
    auto artifact = Artifact::open(testing::fakeArtifact("fake_train"));
    EXPECT_TRUE(artifact.ok()) << artifact.status().message();
    model.artifact = *artifact;
    model.params = *Params::create(model.artifact);
    EXPECT_TRUE(model.params.init(0).ok());
    model.context = *Context::create(model.artifact, model.params);
    return model;
  }

  // Every parameter and state tensor's bytes, by name.
  std::vector<std::pair<std::string, std::string>> tensors() const {
    std::vector<std::pair<std::string, std::string>> all;
    for (int32_t i = 0; i < artifact.paramCount(); ++i) {
      tfc_tensor_ref_t ref = *params.tensor(i);
      all.emplace_back(artifact.param(i).name,
                       std::string(static_cast<const char*>(ref.data), ref.byte_size));
    }
    for (int32_t i = 0; i < artifact.stateCount(); ++i) {
      tfc_tensor_ref_t ref = *context.state(i);
      all.emplace_back(std::string(kStatePrefix) + artifact.state(i).name,
                       std::string(static_cast<const char*>(ref.data), ref.byte_size));
    }
    return all;
  }
};

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A headerless uint16 token file with some structure to learn.
    std::string bytes;
    uint32_t x = 12345;
    for (int i = 0; i < 4000; ++i) {
      x = x * 1103515245u + 12345u;
      uint16_t token = static_cast<uint16_t>(i % 3 == 0 ? (x >> 16) % 16 : (i * 5) % 16);
      bytes.append(reinterpret_cast<const char*>(&token), 2);
    }
    testing::writeBytes(dir_.file("train.bin"), bytes);
  }

  TrainerOptions options(int64_t steps, const std::string& save) const {
    TrainerOptions o;
    o.dataPath = dir_.file("train.bin");
    o.steps = steps;
    o.totalSteps = 8;
    o.seed = 42;
    o.hyper.lr = 1e-2;
    o.hyper.warmup = 2;
    o.hyper.schedule = 2;
    o.savePath = save.empty() ? "" : dir_.file(save);
    return o;
  }

  testing::TempDir dir_;
};

// The first step's loss is the loss entry's value on the first batch the sampler draws,
// computed here by hand before any update.
TEST_F(TrainerTest, FirstLossIsTheLossEntryOnTheSamplersFirstBatch) {
  Model model = Model::load();
  auto data = TokenData::open(dir_.file("train.bin"), TokenFileDtype::kUint16);
  ASSERT_TRUE(data.ok()) << data.status().message();
  BatchSampler sampler(&*data, 2, 8, 42);
  auto x = HostTensor::allocate(TFC_DTYPE_I32, {2, 8});
  auto y = HostTensor::allocate(TFC_DTYPE_I32, {2, 8});
  sampler.next(x->mutableDataAs<int32_t>(), y->mutableDataAs<int32_t>());
  auto expected = model.context.call("loss", {x->view(), y->view()});
  ASSERT_TRUE(expected.ok()) << expected.status().message();

  auto trainer = Trainer::create(model.context, options(1, ""));
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  EXPECT_EQ(trainer->batch(), 2);
  EXPECT_EQ(trainer->seq(), 8);
  auto outcome = trainer->run(nullptr);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  ASSERT_EQ(trainer->history().size(), 1u);
  EXPECT_EQ(static_cast<float>(trainer->history()[0].loss), (*expected)[0].dataAs<float>()[0]);
  EXPECT_EQ(trainer->step(), 1);
}

// Stopped at step 3 (as Ctrl-C does), saved, resumed by a new trainer on a new context:
// the parameters, the optimizer state and every loss equal those of an uninterrupted run.
TEST_F(TrainerTest, StopAndResumeIsBitIdenticalToAnUninterruptedRun) {
  Model straight = Model::load();
  auto uninterrupted = Trainer::create(straight.context, options(6, "straight.safetensors"));
  ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.status().message();
  std::vector<TrainProgress> seen;
  auto done = uninterrupted->run([&](const TrainProgress& p) {
    seen.push_back(p);
    return Status();
  });
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_FALSE(done->stopped);
  ASSERT_EQ(seen.size(), 7u);  // 6 steps and the save at the last
  EXPECT_EQ(seen.back().event, TrainProgress::Event::kSaved);
  EXPECT_EQ(seen.back().row.step, 6);

  Model first = Model::load();
  auto interrupted = Trainer::create(first.context, options(6, "resumed.safetensors"));
  ASSERT_TRUE(interrupted.ok());
  auto stopped = interrupted->run([&](const TrainProgress& p) {
    if (p.event == TrainProgress::Event::kStep && p.row.step == 3) interrupted->requestStop();
    return Status();
  });
  ASSERT_TRUE(stopped.ok()) << stopped.status().message();
  EXPECT_TRUE(stopped->stopped);
  EXPECT_EQ(stopped->lastStep, 3);

  Model second = Model::load();
  ASSERT_TRUE(second.params.init(99).ok());  // overwritten by the checkpoint
  auto resumed = Trainer::create(second.context, options(6, "resumed.safetensors"));
  ASSERT_TRUE(resumed.ok());
  auto metadata = resumed->resume(dir_.file("resumed.safetensors"));
  ASSERT_TRUE(metadata.ok()) << metadata.status().message();
  EXPECT_EQ(metadata->at("step"), "3");
  EXPECT_EQ(resumed->step(), 3);
  auto rest = resumed->run(nullptr);
  ASSERT_TRUE(rest.ok()) << rest.status().message();
  EXPECT_EQ(rest->firstStep, 4);
  EXPECT_EQ(resumed->step(), 6);

  EXPECT_TRUE(second.tensors() == straight.tensors());
  ASSERT_EQ(resumed->history().size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(resumed->history()[i].step, uninterrupted->history()[i + 3].step);
    EXPECT_EQ(resumed->history()[i].loss, uninterrupted->history()[i + 3].loss);
    EXPECT_EQ(resumed->history()[i].lr, uninterrupted->history()[i + 3].lr);
  }
  // The two checkpoints hold the same tensors.
  auto a = SafetensorsFile::open(dir_.file("straight.safetensors"));
  auto b = SafetensorsFile::open(dir_.file("resumed.safetensors"));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  for (const SafetensorsTensorInfo& info : a->tensors()) {
    const SafetensorsTensorInfo* other = b->find(info.name);
    ASSERT_NE(other, nullptr) << info.name;
    EXPECT_EQ(std::memcmp(info.data, other->data, info.byteSize), 0) << info.name;
  }
}

TEST_F(TrainerTest, EvaluatesWritesTheLogAndRefusesBadInput) {
  Model model = Model::load();
  TrainerOptions o = options(4, "");
  o.evalDataPath = dir_.file("train.bin");
  o.evalEvery = 2;
  o.evalBatches = 3;
  o.logPath = dir_.file("train.csv");
  auto trainer = Trainer::create(model.context, o);
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  auto outcome = trainer->run(nullptr);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  const auto& rows = trainer->history();
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_TRUE(std::isnan(rows[0].evalLoss));
  EXPECT_TRUE(std::isfinite(rows[1].evalLoss));
  EXPECT_TRUE(std::isnan(rows[2].evalLoss));
  EXPECT_TRUE(std::isfinite(rows[3].evalLoss));
  std::string log = testing::readBytes(dir_.file("train.csv"));
  EXPECT_EQ(log.rfind("step,loss,lr,grad_norm,tokens_per_s,eval_loss\n1,", 0), 0u) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 5);

  auto expectError = [&](TrainerOptions bad, const std::string& message) {
    auto refused = Trainer::create(model.context, bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(std::string(refused.status().message()).find(message), std::string::npos)
        << refused.status().message();
  };
  TrainerOptions missing = options(2, "");
  missing.dataPath = dir_.file("missing.bin");
  expectError(missing, "missing.bin");
  // Token 16 (in a vocabulary of 16) first, then zeros.
  testing::writeBytes(dir_.file("large.bin"), std::string("\x10\x00", 2) + std::string(64, '\0'));
  TrainerOptions large = options(2, "");
  large.dataPath = dir_.file("large.bin");
  expectError(large, "token id 16 at offset 0");
  expectError(options(0, ""), "give at least 1");
}

// Outputs that would destroy an input are refused when the trainer starts, naming both:
// a checkpoint or log over the data, the model or each other, a log over the checkpoint
// resumed. Saving over the checkpoint resumed from is how a run continues.
TEST_F(TrainerTest, RefusesOutputsThatAreItsInputs) {
  Model model = Model::load();
  const std::string data = dir_.file("train.bin");
  const std::string before = testing::readBytes(data);
  auto expectRefused = [&](const TrainerOptions& bad, const std::string& message) {
    auto refused = Trainer::create(model.context, bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), TFC_INVALID_ARGUMENT);
    EXPECT_NE(std::string(refused.status().message()).find(message), std::string::npos)
        << refused.status().message();
  };
  TrainerOptions o = options(1, "");
  o.savePath = data;  // Python's train(checkpoint=<the data file>)
  expectRefused(o, "the checkpoint '" + data + "' is the same file as the training data");
  o = options(1, "ck.safetensors");
  o.logPath = data;
  expectRefused(o, "the log '" + data + "' is the same file as the training data");
  o = options(1, "ck.safetensors");
  o.evalDataPath = dir_.file("eval.bin");
  testing::writeBytes(dir_.file("eval.bin"), before);
  o.logPath = dir_.file("eval.bin");
  expectRefused(o, "is the same file as the evaluation data");
  o = options(1, "ck.safetensors");
  o.logPath = std::string(model.artifact.path());
  expectRefused(o, "is the same file as the model");
  o = options(1, "ck.safetensors");
  o.logPath = dir_.file("ck.safetensors");
  expectRefused(o, "the log '" + dir_.file("ck.safetensors") + "' is the same file as the checkpoint");
  EXPECT_EQ(testing::readBytes(data), before);

  // Resume: a save over the checkpoint resumed is fine, a log over it is refused.
  auto first = Trainer::create(model.context, options(1, "ck.safetensors"));
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(first->run(nullptr).ok());
  const std::string checkpoint = testing::readBytes(dir_.file("ck.safetensors"));
  Model again = Model::load();
  auto resumed = Trainer::create(again.context, options(2, "ck.safetensors"));
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  EXPECT_TRUE(resumed->resume(dir_.file("ck.safetensors")).ok());
  o = options(2, "other.safetensors");
  o.logPath = dir_.file("ck.safetensors");
  auto logged = Trainer::create(again.context, o);
  ASSERT_TRUE(logged.ok()) << logged.status().message();
  auto refused = logged->resume(dir_.file("ck.safetensors"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string(refused.status().message())
                .find("the log '" + dir_.file("ck.safetensors") +
                      "' is the same file as the resumed checkpoint"),
            std::string::npos)
      << refused.status().message();
  EXPECT_EQ(testing::readBytes(dir_.file("ck.safetensors")), checkpoint);
}

// The C API: stopped from the callback at step 2, resumed by another trainer, it ends where
// an uninterrupted C run does.
struct Stopper {
  int64_t stopAt = 0;
  std::vector<double> losses;
};

bool onProgress(void* user, const tfc_train_progress_t* progress) {
  auto* stopper = static_cast<Stopper*>(user);
  if (progress->event == TFC_TRAIN_STEP) stopper->losses.push_back(progress->loss);
  return progress->step != stopper->stopAt;
}

TEST_F(TrainerTest, CApiStopsResumesAndMatchesAnUninterruptedRun) {
  tfc_trainer_options_t o;
  tfc_trainer_options_initialize(&o);
  EXPECT_EQ(o.seed, 1337u);
  EXPECT_EQ(o.eval_every, 100);
  EXPECT_EQ(o.hyper.lr, 3e-4);
  EXPECT_EQ(o.hyper.beta2, 0.95);
  const std::string data = dir_.file("train.bin");
  const std::string straightPath = dir_.file("c-straight.safetensors");
  const std::string resumedPath = dir_.file("c-resumed.safetensors");
  o.data_path = data.c_str();
  o.steps = 5;
  o.hyper.lr = 1e-2;

  Model straight = Model::load();
  o.save_path = straightPath.c_str();
  tfc_trainer_t* raw = nullptr;
  Status status(tfc_trainer_create(straight.context.get(), &o, &raw));
  ASSERT_TRUE(status.ok()) << status.message();
  Stopper all;
  bool stopped = true;
  status = Status(tfc_trainer_run(raw, onProgress, &all, &stopped));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_FALSE(stopped);
  EXPECT_EQ(tfc_trainer_step(raw), 5);
  tfc_trainer_destroy(raw);

  Model first = Model::load();
  o.save_path = resumedPath.c_str();
  status = Status(tfc_trainer_create(first.context.get(), &o, &raw));
  ASSERT_TRUE(status.ok()) << status.message();
  Stopper early;
  early.stopAt = 2;
  status = Status(tfc_trainer_run(raw, onProgress, &early, &stopped));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_TRUE(stopped);
  EXPECT_EQ(tfc_trainer_step(raw), 2);
  tfc_trainer_destroy(raw);

  Model second = Model::load();
  status = Status(tfc_trainer_create(second.context.get(), &o, &raw));
  ASSERT_TRUE(status.ok()) << status.message();
  status = Status(tfc_trainer_resume(raw, resumedPath.c_str()));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(tfc_trainer_step(raw), 2);
  Stopper rest;
  status = Status(tfc_trainer_run(raw, onProgress, &rest, &stopped));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_FALSE(stopped);
  EXPECT_EQ(tfc_trainer_step(raw), 5);
  status = Status(tfc_trainer_resume(raw, dir_.file("none.safetensors").c_str()));
  EXPECT_FALSE(status.ok());
  tfc_trainer_destroy(raw);

  EXPECT_TRUE(second.tensors() == straight.tensors());
  std::vector<double> joined = early.losses;
  joined.insert(joined.end(), rest.losses.begin(), rest.losses.end());
  EXPECT_EQ(joined, all.losses);
}

}  // namespace
}  // namespace tfc
