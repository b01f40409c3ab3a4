// Tests of `tfc-run train` (and the argument checks of `tfc-seed-experiment`) on a fake
// training artifact (runtime/test/fake_artifacts/fake_train_artifact.c: a bigram model with
// train_step), so that they run without the compiler: argument, data and checkpoint errors, resume
// bit-identity, NaN stop, failed saves, the CSV log and the PNG plot.
#include <gtest/gtest.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli_test_util.hpp"
#include "tfc/runtime/npy.hpp"
#include "tfc/runtime/tensor.hpp"
#include "tfc/runtime/safetensors.hpp"

namespace {

using namespace tfc_run_test;

const std::string kTrainModel = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_train.so";
const std::string kOtherModel = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_train_other.so";
const std::string kPlainModel = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_model.so";

class TrainTest : public ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    data_ = writeTokens("train.bin", pattern16(4000));
  }

  // A learnable stream: 0 1 2 ... 15 repeated, every 7th token replaced by noise.
  static std::vector<uint16_t> pattern16(size_t count) {
    std::vector<uint16_t> tokens(count);
    uint32_t noise = 12345;
    for (size_t i = 0; i < count; ++i) {
      noise = noise * 1103515245u + 12345u;
      tokens[i] = static_cast<uint16_t>(i % 7 == 6 ? (noise >> 16) % 16 : i % 16);
    }
    return tokens;
  }
  template <typename T>
  std::string writeTokens(const std::string& name, const std::vector<T>& tokens,
                          const std::string& header = "") {
    std::ofstream out(file(name), std::ios::binary);
    out << header;
    out.write(reinterpret_cast<const char*>(tokens.data()),
              static_cast<std::streamsize>(tokens.size() * sizeof(T)));
    return file(name);
  }

  std::vector<std::string> train(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {kTrainModel, "train", "--data", data_, "--lr", "0.05"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  std::string data_;
};

// The tensors of a safetensors file by name, as bytes.
std::map<std::string, std::string> tensorBytes(const std::string& path) {
  std::map<std::string, std::string> bytes;
  auto file = tfc::SafetensorsFile::open(path);
  EXPECT_OK(file);
  if (!file.ok()) return bytes;
  for (const auto& info : file->tensors()) {
    bytes[info.name] = std::string(reinterpret_cast<const char*>(info.data), info.byteSize);
  }
  return bytes;
}

TEST_F(TrainTest, HelpAndUsageErrors) {
  Result help = run({"train", "--help"});
  EXPECT_EQ(help.code, 0) << help.output;
  EXPECT_TRUE(contains(help.output, "usage: tfc-run MODEL.so")) << help.output;
  EXPECT_TRUE(contains(help.output, "--save-every K      also save every K steps (default 0: "
                                    "only at the last step"))
      << help.output;
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  std::string ckpt = file("c.safetensors");
  std::vector<Case> cases = {
      {{kTrainModel, "train", "--steps", "5", "--save", ckpt, "--init-seed", "0"}, "missing --data"},
      {{kTrainModel, "train", "--data", data_, "--save", ckpt, "--init-seed", "0"}, "missing --steps"},
      {{kTrainModel, "train", "--data", data_, "--steps", "5", "--init-seed", "0"}, "missing --save"},
      {{kTrainModel, "train", "--data", data_, "--steps", "5", "--save", ckpt}, "missing --weights"},
      {{kTrainModel, "train", "--data", data_, "--steps", "5", "--save", ckpt, "--init-seed", "0",
        "--resume", ckpt},
       "only one of --resume and --init-seed"},
      {{kTrainModel, "train", "--data", data_, "--steps", "5", "--save", ckpt, "--weights", ckpt,
        "--resume", ckpt},
       "only one of --resume and --weights"},
      {{kTrainModel, "train", "--data", data_, "--steps", "5", "--save", ckpt, "--weights", ckpt,
        "--init-seed", "0"},
       "only one of --weights and --init-seed"},
      // The schedule would end before the run does and train the rest at --min-lr.
      {{kTrainModel, "train", "--data", data_, "--steps", "50", "--total-steps", "40", "--save",
        ckpt, "--init-seed", "0"},
       "--total-steps 40 is below --steps 50"},
      {{kTrainModel, "train", "--data", data_, "--steps", "0", "--save", ckpt, "--init-seed", "0"},
       "--steps '0' is not a positive integer"},
      {{kTrainModel, "train", "--data", data_, "--steps", "5", "--save", ckpt, "--init-seed", "0",
        "--schedule", "exp"},
       "--schedule 'exp' is not one of constant, linear, cosine"},
      {{kTrainModel, "train", "--data", data_, "--steps", "5", "--save", ckpt, "--init-seed", "0",
        "--lr", "fast"},
       "--lr 'fast' is not a finite number"},
      {{kTrainModel, "train", "--data", data_, "--steps", "5", "--save", ckpt, "--init-seed", "0",
        "--data-dtype", "int8"},
       "--data-dtype 'int8' is not uint16 or uint32"},
      {{kTrainModel, "train", "--data", data_, "--steps", "5", "--save", ckpt, "--init-seed", "0",
        "--eval-every", "5"},
       "need --eval-data"},
  };
  for (const Case& c : cases) {
    Result result = run(c.args);
    EXPECT_EQ(result.code, 2) << result.output;
    EXPECT_TRUE(contains(result.output, c.message)) << c.message << "\n" << result.output;
  }
}

TEST_F(TrainTest, ModelErrors) {
  std::string ckpt = file("c.safetensors");
  Result shapes = run(train({"--init-seed", "0", "--steps", "5", "--save", ckpt, "--batch", "4",
                             "--seq", "8"}));
  EXPECT_EQ(shapes.code, 1);
  EXPECT_TRUE(contains(shapes.output, "was compiled for --batch 2 --seq 8")) << shapes.output;
  EXPECT_TRUE(contains(shapes.output, "tfc-trace fake-bigram --set batch=4 --set seq=8"))
      << shapes.output;
  Result momentum = run(train({"--init-seed", "0", "--steps", "5", "--save", ckpt, "--momentum",
                               "0.9"}));
  EXPECT_EQ(momentum.code, 1);
  EXPECT_TRUE(contains(momentum.output, "--momentum applies to SGD")) << momentum.output;
  Result noTrainStep = run({kPlainModel, "train", "--data", data_, "--init-seed", "0", "--steps",
                            "5", "--save", ckpt});
  EXPECT_EQ(noTrainStep.code, 1);
  EXPECT_TRUE(contains(noTrainStep.output, "has no train_step entry")) << noTrainStep.output;
  EXPECT_TRUE(contains(noTrainStep.output, "--optimizer=adamw")) << noTrainStep.output;
  Result folder = run(train({"--init-seed", "0", "--steps", "5", "--save", file("no/c.safetensors")}));
  EXPECT_EQ(folder.code, 1);
  EXPECT_TRUE(contains(folder.output, "does not exist")) << folder.output;
}

TEST_F(TrainTest, DataErrors) {
  std::string ckpt = file("c.safetensors");
  auto attempt = [&](const std::string& data, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {kTrainModel, "train", "--data", data, "--init-seed", "0",
                                     "--steps", "3", "--save", ckpt};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  };
  Result missing = attempt(file("missing.bin"));
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(contains(missing.output, file("missing.bin"))) << missing.output;

  Result empty = attempt(writeTokens("empty.bin", std::vector<uint16_t>{}));
  EXPECT_EQ(empty.code, 1);
  EXPECT_TRUE(contains(empty.output, "empty.bin: the data file holds no tokens")) << empty.output;

  Result shortFile = attempt(writeTokens("short.bin", std::vector<uint16_t>(9, 1)));
  EXPECT_EQ(shortFile.code, 1);
  EXPECT_TRUE(contains(shortFile.output, "short.bin: holds 9 tokens, too few")) << shortFile.output;

  Result odd = attempt(writeTokens("odd.bin", std::vector<uint8_t>(101, 1)));
  EXPECT_EQ(odd.code, 1);
  EXPECT_TRUE(contains(odd.output, "101 bytes is not a whole number of uint16 tokens")) << odd.output;

  std::vector<uint16_t> tokens = pattern16(500);
  tokens[321] = 16;  // the vocabulary is 16
  Result vocab = attempt(writeTokens("vocab.bin", tokens));
  EXPECT_EQ(vocab.code, 1);
  EXPECT_TRUE(contains(vocab.output, "vocab.bin: token id 16 at offset 321")) << vocab.output;
  EXPECT_TRUE(contains(vocab.output, "vocabulary of 16")) << vocab.output;

  // uint32 files: read as uint16 they would hold zeros between ids; with --data-dtype uint32
  // a large id is reported at its token offset.
  std::vector<uint32_t> wide(500, 3);
  wide[77] = 70000;
  Result wideVocab = attempt(writeTokens("wide.bin", wide), {"--data-dtype", "uint32"});
  EXPECT_EQ(wideVocab.code, 1);
  EXPECT_TRUE(contains(wideVocab.output, "token id 70000 at offset 77")) << wideVocab.output;

  // llm.c's header: magic, version 1 (uint16), the token count.
  std::string header(1024, '\0');
  int32_t fields[3] = {20240520, 1, 600};
  std::memcpy(&header[0], fields, sizeof(fields));
  Result llmc = attempt(writeTokens("llmc.bin", pattern16(600), header));
  EXPECT_EQ(llmc.code, 0) << llmc.output;
  EXPECT_TRUE(contains(llmc.output, "llm.c v1 (uint16), 600 tokens")) << llmc.output;
  Result truncated = attempt(writeTokens("llmc_short.bin", pattern16(500), header));
  EXPECT_EQ(truncated.code, 1);
  EXPECT_TRUE(contains(truncated.output, "announces 600 tokens")) << truncated.output;
  fields[1] = 7;
  std::memcpy(&header[0], fields, sizeof(fields));
  Result version = attempt(writeTokens("llmc_v7.bin", pattern16(600), header));
  EXPECT_EQ(version.code, 1);
  EXPECT_TRUE(contains(version.output, "version 7")) << version.output;

  // .npy: a 1-D integer array works; 2-D and float arrays are refused.
  auto npy = [&](const std::string& name, tfc_dtype_t dtype, std::vector<int64_t> shape) {
    auto tensor = tfc::HostTensor::allocate(dtype, std::move(shape));
    EXPECT_OK(tensor);
    if (dtype == TFC_DTYPE_I64) {
      for (int64_t i = 0; i < tensor->numElements(); ++i) tensor->mutableDataAs<int64_t>()[i] = i % 16;
    }
    EXPECT_OK(tfc::writeNpy(file(name), tensor->view()));
    return file(name);
  };
  Result good = attempt(npy("good.npy", TFC_DTYPE_I64, {300}));
  EXPECT_EQ(good.code, 0) << good.output;
  Result twoD = attempt(npy("two.npy", TFC_DTYPE_I64, {30, 10}));
  EXPECT_EQ(twoD.code, 1);
  EXPECT_TRUE(contains(twoD.output, "must be a 1-D array")) << twoD.output;
  Result floats = attempt(npy("floats.npy", TFC_DTYPE_F32, {300}));
  EXPECT_EQ(floats.code, 1);
  EXPECT_TRUE(contains(floats.output, "token ids must be integers")) << floats.output;
}

TEST_F(TrainTest, TrainsLogsAndPlots) {
  std::string ckpt = file("c.safetensors"), log = file("train.csv"), plot = file("loss.png");
  std::string eval = writeTokens("val.bin", pattern16(1000));
  Result result = run(train({"--init-seed", "0", "--steps", "60", "--save", ckpt, "--log", log,
                             "--plot", plot, "--eval-data", eval, "--eval-every", "20",
                             "--eval-batches", "4"}));
  ASSERT_EQ(result.code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "step 60/60")) << result.output;
  EXPECT_TRUE(contains(result.output, "tok/s")) << result.output;
  std::string csv = readAll(log);
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "step,loss,lr,grad_norm,tokens_per_s,eval_loss");
  std::vector<double> losses;
  int evals = 0;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields;
    std::stringstream stream(line);
    std::string field;
    while (std::getline(stream, field, ',')) fields.push_back(field);
    ASSERT_GE(fields.size(), 5u) << line;
    losses.push_back(std::atof(fields[1].c_str()));
    if (fields.size() == 6 && !fields[5].empty()) ++evals;
  }
  ASSERT_EQ(losses.size(), 60u);
  EXPECT_EQ(evals, 3);
  double first = 0, last = 0;
  for (int i = 0; i < 10; ++i) first += losses[static_cast<size_t>(i)], last += losses[losses.size() - 1 - i];
  EXPECT_LT(last, 0.7 * first) << csv;
  // The checkpoint: parameters by name, state under state., the step in the metadata.
  auto file = tfc::SafetensorsFile::open(ckpt);
  ASSERT_OK(file);
  EXPECT_NE(file->find("wte"), nullptr);
  EXPECT_NE(file->find("state.opt.m.wte"), nullptr);
  EXPECT_NE(file->find("state.train.step"), nullptr);
  EXPECT_EQ(file->metadata().at("step"), "60");
  EXPECT_EQ(file->metadata().at("format"), "tfc-train-checkpoint-v1");
  EXPECT_TRUE(contains(file->metadata().at("model_metadata"), "fake-bigram"));
  // The plot: a PNG (decoded independently with Python's zlib where Python exists).
  std::string png = readAll(plot);
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  if (std::system("python3 -c 'import zlib' >/dev/null 2>&1") == 0) {
    std::string script =
        "import struct, sys, zlib\n"
        "b = open(sys.argv[1], 'rb').read()\n"
        "assert b[:8] == b'\\x89PNG\\r\\n\\x1a\\n'\n"
        "i, idat, dims = 8, b'', None\n"
        "while i < len(b):\n"
        "    n, = struct.unpack('>I', b[i:i+4]); t = b[i+4:i+8]; d = b[i+8:i+8+n]\n"
        "    assert struct.unpack('>I', b[i+8+n:i+12+n])[0] == zlib.crc32(t + d), t\n"
        "    if t == b'IHDR': dims = struct.unpack('>IIBBBBB', d)\n"
        "    if t == b'IDAT': idat += d\n"
        "    i += 12 + n\n"
        "w, h, depth, color = dims[:4]\n"
        "assert (depth, color) == (8, 2)\n"
        "raw = zlib.decompress(idat)\n"
        "assert len(raw) == h * (1 + 3 * w)\n"
        "rows = [raw[r*(1+3*w)+1:(r+1)*(1+3*w)] for r in range(h)]\n"
        "colors = set(rows[r][3*c:3*c+3] for r in range(h) for c in range(w))\n"
        "assert bytes([20, 80, 200]) in colors and bytes([220, 50, 40]) in colors, colors\n"
        "print('png ok', w, h)\n";
    std::ofstream(this->file("check_png.py")) << script;
    std::string command = "python3 " + quote(this->file("check_png.py")) + " " + quote(plot);
    EXPECT_EQ(std::system(command.c_str()), 0);
  }
}

TEST_F(TrainTest, ResumeIsBitIdentical) {
  std::string straight = file("straight.safetensors"), split = file("split.safetensors");
  std::vector<std::string> common = {"--init-seed", "1", "--seed", "9", "--schedule", "cosine",
                                     "--warmup", "3"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return train(args);
  };
  ASSERT_EQ(run(with({"--steps", "20", "--save", straight})).code, 0);
  // The first half stops at step 10 of the same 20-step schedule.
  ASSERT_EQ(run(with({"--steps", "10", "--total-steps", "20", "--save", split})).code, 0);
  std::vector<std::string> resume = train({"--resume", split, "--steps", "20", "--save", split,
                                           "--schedule", "cosine", "--warmup", "3"});
  Result resumed = run(resume);
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "resuming from")) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "step 11/20")) << resumed.output;
  auto a = tensorBytes(straight), b = tensorBytes(split);
  ASSERT_EQ(a.size(), 7u);
  ASSERT_EQ(b.size(), 7u);
  for (const auto& [name, bytes] : a) {
    EXPECT_TRUE(bytes == b[name]) << name << " differs after 20 steps vs 10 + resume 10";
  }
  // A constant schedule needs no --total-steps: 6 straight vs 3 + resume 3.
  std::string six = file("six.safetensors"), three = file("three.safetensors");
  ASSERT_EQ(run(train({"--init-seed", "2", "--steps", "6", "--save", six})).code, 0);
  ASSERT_EQ(run(train({"--init-seed", "2", "--steps", "3", "--save", three})).code, 0);
  ASSERT_EQ(run(train({"--resume", three, "--steps", "6", "--save", three})).code, 0);
  EXPECT_TRUE(tensorBytes(six) == tensorBytes(three));
  // A checkpoint already at --steps: nothing to do.
  Result done = run(train({"--resume", split, "--steps", "20", "--save", split}));
  EXPECT_EQ(done.code, 0);
  EXPECT_TRUE(contains(done.output, "nothing to do")) << done.output;
}

TEST_F(TrainTest, CheckpointErrors) {
  std::string ckpt = file("c.safetensors");
  ASSERT_EQ(run(train({"--init-seed", "0", "--steps", "3", "--save", ckpt})).code, 0);
  Result other = run({kOtherModel, "train", "--data", data_, "--resume", ckpt, "--steps", "6",
                      "--save", file("d.safetensors")});
  EXPECT_EQ(other.code, 1);
  EXPECT_TRUE(contains(other.output, "written for another model")) << other.output;
  // Plain weights are not a checkpoint.
  std::string weights = file("w.safetensors");
  ASSERT_EQ(run({kTrainModel, "init", "-o", weights}).code, 0);
  Result plain = run(train({"--resume", weights, "--steps", "6", "--save", ckpt}));
  EXPECT_EQ(plain.code, 1);
  EXPECT_TRUE(contains(plain.output, "not a tfc-run training checkpoint")) << plain.output;
  // ... but a start from them.
  EXPECT_EQ(run(train({"--weights", weights, "--steps", "2", "--save", file("e.safetensors")})).code, 0);
  Result missing = run(train({"--resume", file("none.safetensors"), "--steps", "6", "--save", ckpt}));
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(contains(missing.output, "none.safetensors")) << missing.output;
}

TEST_F(TrainTest, NanStopsAndKeepsTheLastCheckpoint) {
  std::string ckpt = file("c.safetensors");
  ASSERT_EQ(run(train({"--init-seed", "0", "--steps", "5", "--save", ckpt})).code, 0);
  std::string before = readAll(ckpt);
  Result nan = run({kTrainModel, "train", "--data", data_, "--resume", ckpt, "--steps", "50",
                    "--save", ckpt, "--save-every", "1", "--lr", "1e30", "--grad-clip", "0"});
  EXPECT_EQ(nan.code, 1) << nan.output;
  EXPECT_TRUE(contains(nan.output, "stopping without saving")) << nan.output;
  EXPECT_TRUE(contains(nan.output, "the loss is nan") || contains(nan.output, "the loss is inf") ||
              contains(nan.output, "grad norm nan") || contains(nan.output, "grad norm inf") ||
              contains(nan.output, "holds a nan or an infinity after the update"))
      << nan.output;
  EXPECT_TRUE(contains(nan.output, "The last good checkpoint")) << nan.output;
  // With --save-every 1 the good steps before the bad one were saved; the bad one was not.
  auto file = tfc::SafetensorsFile::open(ckpt);
  ASSERT_OK(file);
  int64_t savedStep = std::atoll(file->metadata().at("step").c_str());
  EXPECT_TRUE(contains(nan.output, "step " + std::to_string(savedStep + 1) + ":")) << nan.output;
  for (const auto& info : file->tensors()) {
    if (info.dtype != TFC_DTYPE_F32) continue;
    const float* values = reinterpret_cast<const float*>(info.data);
    for (size_t i = 0; i < info.byteSize / 4; ++i) {
      ASSERT_TRUE(std::isfinite(values[i])) << info.name << " is not finite in the kept checkpoint";
    }
  }
}

TEST_F(TrainTest, FailedSaveKeepsThePreviousCheckpoint) {
  std::string ckpt = file("c.safetensors");
  ASSERT_EQ(run(train({"--init-seed", "0", "--steps", "3", "--save", ckpt})).code, 0);
  std::string before = readAll(ckpt);
  // Files may not grow past 2 blocks (1-2 KiB): the checkpoint (about 4 KiB) cannot be
  // written. tfc-run ignores SIGXFSZ, so the write fails with EFBIG and is reported.
  Result full = run(train({"--resume", ckpt, "--steps", "6", "--save", ckpt}), "ulimit -f 2;");
  EXPECT_EQ(full.code, 1) << full.output;
  EXPECT_TRUE(contains(full.output, "could not save the checkpoint at step 6")) << full.output;
  EXPECT_TRUE(contains(full.output, "is unchanged")) << full.output;
  EXPECT_EQ(readAll(ckpt), before);
  // No temporary file is left behind.
  Result listing;
  std::string command = "ls " + quote(dir_);
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) listing.output.append(buffer, got);
  pclose(pipe);
  EXPECT_FALSE(contains(listing.output, ".tmp")) << listing.output;
}

// A log that cannot be written (a full disk; /dev/full fails every write with ENOSPC)
// stops the run with the file's name and the reason: it used to exit 0 with the log cut
// at 4096 bytes.
TEST_F(TrainTest, LogWriteFailureIsAnError) {
  std::string ckpt = file("c.safetensors");
  Result result = run(train({"--init-seed", "0", "--steps", "3", "--save", ckpt, "--log",
                             "/dev/full"}));
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_TRUE(contains(result.output, "--log /dev/full: write failed: No space left on device"))
      << result.output;
}

// examples/seed-experiment's program: tfc-run's command-line behaviour under its own name.
class SeedExperimentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(TFC_SEED_EXPERIMENT_PATH)) {
      GTEST_SKIP() << TFC_SEED_EXPERIMENT_PATH << " is not built (a runtime-only build)";
    }
  }
  static Result seed(const std::vector<std::string>& args) {
    return runProgram(TFC_SEED_EXPERIMENT_PATH, args);
  }
};

TEST_F(SeedExperimentTest, HelpUsageAndModelErrors) {
  for (const char* flag : {"--help", "-h"}) {
    Result help = seed({flag});
    EXPECT_EQ(help.code, 0) << help.output;
    EXPECT_TRUE(contains(help.output, "usage: tfc-seed-experiment MODEL.so")) << help.output;
  }
  Result none = seed({});
  EXPECT_EQ(none.code, 2);
  EXPECT_TRUE(contains(none.output, "usage: tfc-seed-experiment MODEL.so")) << none.output;
  Result task = seed({kTrainModel, "--task", "sorting"});
  EXPECT_EQ(task.code, 2);
  EXPECT_TRUE(contains(task.output, "tfc-seed-experiment: error: --task 'sorting'")) << task.output;
  EXPECT_TRUE(contains(task.output, "(see tfc-seed-experiment --help)")) << task.output;
  Result option = seed({kTrainModel, "--epoch", "3"});
  EXPECT_EQ(option.code, 2);
  EXPECT_TRUE(contains(option.output, "unknown option '--epoch' for 'tfc-seed-experiment'; did "
                                      "you mean '--epochs'?")) << option.output;
  Result first = seed({"--seed", "1"});
  EXPECT_EQ(first.code, 2);
  EXPECT_TRUE(contains(first.output, "the model comes first")) << first.output;
  Result model = seed({kTrainModel});
  EXPECT_EQ(model.code, 1);
  EXPECT_TRUE(contains(model.output, "needs the encoder-decoder model")) << model.output;
  // An output that is the model is refused before anything is written.
  Result clobber = seed({kTrainModel, "--log", kTrainModel});
  EXPECT_EQ(clobber.code, 1) << clobber.output;
  Result log = seed({kTrainModel, "--log", "/dev/full"});
  EXPECT_NE(log.code, 0) << log.output;
}

// Standard output is an output file too: generate's text, info's summary.
TEST_F(TrainTest, StandardOutputWriteFailureIsAnError) {
  Result info = run({kTrainModel, "info"}, "exec >/dev/full;");
  EXPECT_EQ(info.code, 1) << info.output;
  EXPECT_TRUE(contains(info.output, "cannot write standard output: No space left on device"))
      << info.output;
}

// Saves go through the runtime's atomic writer: a node that is not a regular file is
// refused (as root, --save /dev/full used to replace the device with a regular file; a
// FIFO stands in for it here so that a regression cannot destroy /dev/full), and a
// symbolic link is written through, not replaced.
TEST_F(TrainTest, SaveRefusesNonRegularTargetsAndWritesThroughLinks) {
  std::string fifo = file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result save = run(train({"--init-seed", "0", "--steps", "2", "--save", fifo}));
  EXPECT_EQ(save.code, 1) << save.output;
  EXPECT_TRUE(contains(save.output, fifo + " is a named pipe; refusing to replace it"))
      << save.output;
  Result init = run({kTrainModel, "init", "-o", fifo});
  EXPECT_EQ(init.code, 1) << init.output;
  EXPECT_TRUE(contains(init.output, "is a named pipe")) << init.output;
  struct stat info;
  ASSERT_EQ(::lstat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));

  ASSERT_EQ(::mkdir(file("store").c_str(), 0700), 0);
  std::string link = file("latest.safetensors");
  ASSERT_EQ(::symlink("store/run1.safetensors", link.c_str()), 0);
  Result linked = run(train({"--init-seed", "0", "--steps", "2", "--save", link}));
  ASSERT_EQ(linked.code, 0) << linked.output;
  ASSERT_EQ(::lstat(link.c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode)) << "the link was replaced";
  EXPECT_FALSE(tensorBytes(file("store/run1.safetensors")).empty());
  Result resumed = run(train({"--resume", link, "--steps", "4", "--save", link}));
  EXPECT_EQ(resumed.code, 0) << resumed.output;
  ASSERT_EQ(::lstat(link.c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode));
}

// A save killed half-way leaves "<name>.tmp.<pid>.<random>"; the next save of the same
// checkpoint removes it (its writer is dead) and keeps a live writer's.
TEST_F(TrainTest, NextSaveRemovesStaleTemporaries) {
  std::string ckpt = file("c.safetensors");
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  std::string stale = ckpt + ".tmp." + std::to_string(child) + ".0badf00d";
  std::string live = ckpt + ".tmp." + std::to_string(::getpid()) + ".600dcafe";
  std::ofstream(stale) << "partial checkpoint";
  std::ofstream(live) << "a concurrent save";
  ASSERT_EQ(run(train({"--init-seed", "0", "--steps", "2", "--save", ckpt})).code, 0);
  EXPECT_FALSE(exists(stale));
  EXPECT_TRUE(exists(live));
}

// decode and prefill take cache positions: tfc-run checks them against the model's n_ctx
// (8 here, prefill chunk 4) and says what is wrong instead of the kernel's "embedding: id
// out of range"; prefill's n is refused out of [1, P] instead of clamped.
TEST_F(TrainTest, CallChecksCachePositions) {
  std::string token = file("token.npy");
  std::string tokens = file("tokens.npy");
  {
    int32_t one[2] = {1, 2};
    ASSERT_OK(tfc::writeNpy(token, tfc::TensorView{TFC_DTYPE_I32, {2, 1}, one, sizeof(one)}));
    int32_t four[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ASSERT_OK(tfc::writeNpy(tokens, tfc::TensorView{TFC_DTYPE_I32, {2, 4}, four, sizeof(four)}));
  }
  auto call = [&](std::vector<std::string> in) {
    std::vector<std::string> args = {kTrainModel, "call", in[0], "--init-seed", "0", "--out-dir",
                                     file("out")};
    for (size_t i = 1; i < in.size(); ++i) {
      args.push_back("--in");
      args.push_back(in[i]);
    }
    return run(args);
  };
  Result good = call({"decode", "token=" + token, "pos=7"});
  EXPECT_EQ(good.code, 0) << good.output;
  good = call({"prefill", "tokens=" + tokens, "pos=4", "n=4"});
  EXPECT_EQ(good.code, 0) << good.output;
  struct Case {
    std::vector<std::string> in;
    const char* message;
  };
  const Case cases[] = {
      {{"decode", "token=" + token, "pos=8"},
       "entry 'decode': position 8 + 1 token exceeds the context: the model's context length "
       "(n_ctx) is 8, so pos is at most 7"},
      {{"decode", "token=" + token, "pos=-1"},
       "entry 'decode': pos = -1 is not a position in the KV cache: positions start at 0 and "
       "the context length (n_ctx) is 8"},
      {{"prefill", "tokens=" + tokens, "pos=5", "n=1"},
       "entry 'prefill': position 5 + 4 tokens exceeds the context: the model's context "
       "length (n_ctx) is 8, so pos is at most 4"},
      {{"prefill", "tokens=" + tokens, "pos=0", "n=5"},
       "entry 'prefill': n = 5 is out of range: it counts the tokens of the chunk in use, 1 to 4"},
      {{"prefill", "tokens=" + tokens, "pos=0", "n=0"}, "n = 0 is out of range"},
      {{"prefill", "tokens=" + tokens, "pos=0", "n=-2147483648"}, "n = -2147483648 is out of range"},
  };
  for (const Case& c : cases) {
    Result result = call(c.in);
    EXPECT_EQ(result.code, 1) << result.output;
    EXPECT_TRUE(contains(result.output, c.message)) << c.message << "\n" << result.output;
    EXPECT_FALSE(contains(result.output, "embedding")) << result.output;
  }
}

// ---------------------------------------------------------------------------------------
// Fault injection: checkpoints survive SIGKILL at any point of a save, a read-only folder
// and a full device.

// The names in |dir| that are temporaries of an atomic write.
std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> found;
  if (DIR* listing = ::opendir(dir.c_str())) {
    while (struct dirent* entry = ::readdir(listing)) {
      if (std::strstr(entry->d_name, ".tmp.") != nullptr) found.push_back(entry->d_name);
    }
    ::closedir(listing);
  }
  return found;
}

// A train run that saves at every step, killed with SIGKILL after a seeded random delay,
// over and over: whatever the kill interrupted (a step, the write of the temporary, its
// fsync, the rename), the checkpoint present must load and resume, and the next save must
// leave no temporary behind. The seed is the test seed (TFC_TEST_SEED), printed on failure.
TEST_F(TrainTest, CheckpointSurvivesSigkillDuringSaves) {
  const uint64_t seed = tfc::testing::testSeedForCurrentTest();
  SCOPED_TRACE("kill delays drawn with seed " + std::to_string(seed) + " (TFC_TEST_SEED=" +
               std::to_string(tfc::testing::testSeed()) + ")");
  std::mt19937_64 random(seed);
  const std::string ckpt = file("c.safetensors");
  ASSERT_EQ(run(train({"--init-seed", "0", "--steps", "1", "--save", ckpt})).code, 0);
  int killedWithTemporary = 0;
  const int kRounds = 12;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::string> args = train({"--resume", ckpt, "--steps", "1000000",
                                           "--save-every", "1", "--save", ckpt});
    args.insert(args.begin(), TFC_RUN_PATH);
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
      ::execv(TFC_RUN_PATH, argv.data());
      ::_exit(127);
    }
    // From before the first save (start-up, loading) to well into the saving loop.
    std::uniform_int_distribution<int> delay(1000, 60000);
    int micros = delay(random);
    ::usleep(static_cast<useconds_t>(micros));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    SCOPED_TRACE("round " + std::to_string(round) + ", killed after " + std::to_string(micros) +
                 " us");
    if (!temporaries(dir_).empty()) ++killedWithTemporary;

    // The checkpoint present is a whole one, of a step the run reached.
    auto checkpoint = tfc::SafetensorsFile::open(ckpt);
    ASSERT_OK(checkpoint);
    int64_t step = std::atoll(checkpoint->metadata().at("step").c_str());
    ASSERT_GE(step, 1);
    // It resumes, and that run's save removes the killed writer's temporary.
    Result resumed = run(train({"--resume", ckpt, "--steps", std::to_string(step + 1), "--save",
                                ckpt}));
    ASSERT_EQ(resumed.code, 0) << resumed.output;
    EXPECT_TRUE(contains(resumed.output, "resuming from")) << resumed.output;
    EXPECT_EQ(temporaries(dir_), std::vector<std::string>{}) << "left after the next save";
  }
  // Informational: how many kills landed inside a save (seed-dependent).
  fmt::print("{} of {} kills left a temporary, each removed by the next save\n",
             killedWithTemporary, kRounds);
}

// A save into a folder the writer may not write to fails, naming the file and the reason,
// and keeps the previous checkpoint. As root, permissions do not stop writes, so the run
// drops to user nobody (setpriv), as an ordinary user would run it.
TEST_F(TrainTest, ReadOnlyFolderKeepsThePreviousCheckpoint) {
  ASSERT_EQ(::mkdir(file("ro").c_str(), 0755), 0);
  const std::string ckpt = file("ro/c.safetensors");
  ASSERT_EQ(run(train({"--init-seed", "0", "--steps", "2", "--save", ckpt})).code, 0);
  const std::string before = readAll(ckpt);
  ASSERT_EQ(::chmod(file("ro").c_str(), 0555), 0);
  std::string wrapper;
  std::vector<std::string> args = train({"--resume", ckpt, "--steps", "4", "--save", ckpt});
  if (::geteuid() == 0) {
    // nobody must reach the model, the data and the folder. The model is copied next to
    // them: the build tree may sit below a folder only root can enter (mktemp -d's 0700).
    const std::string model = file("model.so");
    std::ofstream(model, std::ios::binary) << readAll(kTrainModel);
    ASSERT_EQ(::chmod(model.c_str(), 0755), 0);
    args[0] = model;
    ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
    ASSERT_EQ(::chmod(ckpt.c_str(), 0644), 0);
    ASSERT_EQ(::chmod(data_.c_str(), 0644), 0);
    wrapper = "setpriv --reuid=65534 --regid=65534 --clear-groups";
  }
  Result result = run(args, "", wrapper);
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_TRUE(contains(result.output, "could not save the checkpoint at step 4")) << result.output;
  EXPECT_TRUE(contains(result.output, "Permission denied")) << result.output;
  EXPECT_TRUE(contains(result.output, ckpt)) << result.output;
  EXPECT_EQ(readAll(ckpt), before);
  EXPECT_EQ(temporaries(file("ro")), std::vector<std::string>{});
}

// A character device as the checkpoint (as root a clone of /dev/full made with mknod, so
// that a regression cannot destroy the machine's) is refused and stays a device; a log on
// /dev/full stops the run before anything replaces the previous checkpoint.
TEST_F(TrainTest, FullDeviceKeepsThePreviousCheckpoint) {
  const std::string ckpt = file("c.safetensors");
  ASSERT_EQ(run(train({"--init-seed", "0", "--steps", "2", "--save", ckpt})).code, 0);
  const std::string before = readAll(ckpt);
  // On resume the earlier rows are read from the log: a device must not be read (/dev/full
  // reads as endless NUL bytes; that took a minute and gigabytes): 10 s of CPU at most.
  Result log = run(train({"--resume", ckpt, "--steps", "4", "--save", ckpt, "--log",
                          "/dev/full"}),
                   "ulimit -t 10;");
  EXPECT_EQ(log.code, 1) << log.output;
  EXPECT_TRUE(contains(log.output, "No space left on device")) << log.output;
  EXPECT_EQ(readAll(ckpt), before);

  std::string device = file("full");
  if (::mknod(device.c_str(), S_IFCHR | 0600, makedev(1, 7)) != 0) device = "/dev/full";
  Result save = run(train({"--resume", ckpt, "--steps", "4", "--save", device}));
  EXPECT_EQ(save.code, 1) << save.output;
  EXPECT_TRUE(contains(save.output, device + " is a character device; refusing to replace it"))
      << save.output;
  Result init = run({kTrainModel, "init", "-o", device});
  EXPECT_EQ(init.code, 1) << init.output;
  EXPECT_TRUE(contains(init.output, "is a character device")) << init.output;
  struct stat info;
  ASSERT_EQ(::lstat(device.c_str(), &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode)) << device << " was replaced";
  EXPECT_EQ(readAll(ckpt), before);
  EXPECT_EQ(temporaries(dir_), std::vector<std::string>{});
}

}  // namespace
