// End-to-end tests of the tfc-run command line on the runtime's fake artifacts: each test
// runs the binary, checks its exit code and output, and the files it writes (or not).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.hpp"
#include "tfc/runtime/npy.hpp"
#include "tfc/runtime/safetensors.hpp"

namespace {

using namespace tfc_run_test;

const std::string kModel = std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_model.so";

class TfcRunTest : public ScratchDirTest {
 protected:
  std::string writeF32(const std::string& name, std::vector<int64_t> shape,
                       std::vector<float> values) {
    auto tensor = tfc::HostTensor::allocate(TFC_DTYPE_F32, std::move(shape));
    EXPECT_OK(tensor);
    std::memcpy(tensor->mutableData(), values.data(), values.size() * sizeof(float));
    EXPECT_OK(tfc::writeNpy(file(name), tensor->view()));
    return file(name);
  }

  std::vector<float> readF32(const std::string& path) {
    auto tensor = tfc::readNpy(path);
    EXPECT_OK(tensor);
    if (!tensor.ok()) return {};
    const float* data = tensor->dataAs<float>();
    return std::vector<float>(data, data + tensor->numElements());
  }

  std::string initWeights(const std::string& name = "w.safetensors") {
    Result result = run({kModel, "init", "--seed", "3", "-o", file(name)});
    EXPECT_EQ(result.code, 0) << result.output;
    return file(name);
  }
};

TEST_F(TfcRunTest, HelpTeaches) {
  Result overview = run({"--help"});
  EXPECT_EQ(overview.code, 0);
  EXPECT_TRUE(contains(overview.output, "info")) << overview.output;
  EXPECT_TRUE(contains(overview.output, "inspect"));
  EXPECT_TRUE(contains(overview.output, "generate"));
  for (const char* command : {"info", "init", "call", "inspect"}) {
    Result help = run({command, "--help"});
    EXPECT_EQ(help.code, 0) << command;
    EXPECT_TRUE(contains(help.output, "usage: tfc-run")) << help.output;
    EXPECT_TRUE(contains(help.output, "examples:")) << help.output;
  }
  // --help after a model does not need the model to exist.
  Result help = run({file("missing.so"), "call", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_TRUE(contains(help.output, "--in NAME=FILE"));
  EXPECT_EQ(run({"help", "init"}).code, 0);
}

TEST_F(TfcRunTest, UsageErrors) {
  Result none = run({});
  EXPECT_EQ(none.code, 2);
  Result unknown = run({kModel, "inf"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_TRUE(contains(unknown.output, "tfc-run: error: unknown command 'inf'")) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, "did you mean 'info'?"));
  Result generate = run({kModel, "generate"});  // more in generate_test.cpp
  EXPECT_EQ(generate.code, 2);
  EXPECT_TRUE(contains(generate.output, "missing the prompt")) << generate.output;
  Result option = run({kModel, "info", "--verbos"});
  EXPECT_EQ(option.code, 2);
  EXPECT_TRUE(contains(option.output, "unknown option '--verbos'"));
  EXPECT_TRUE(contains(option.output, "did you mean '--verbose'?"));
  Result noModel = run({"info"});
  EXPECT_EQ(noModel.code, 2);
  EXPECT_TRUE(contains(noModel.output, "needs a model first")) << noModel.output;
  Result missingCommand = run({kModel});
  EXPECT_EQ(missingCommand.code, 2);
  EXPECT_TRUE(contains(missingCommand.output, "missing command"));
}

TEST_F(TfcRunTest, InfoDescribesTheModel) {
  Result info = run({kModel, "info"});
  ASSERT_EQ(info.code, 0) << info.output;
  EXPECT_TRUE(contains(info.output, "target:    x86_64-unknown-linux-gnu:fake")) << info.output;
  EXPECT_TRUE(contains(info.output, "compiler:  tfc 0.1.0 (fake artifact)"));
  EXPECT_TRUE(contains(info.output, "hash:      0123456789abcdef"));
  EXPECT_TRUE(contains(info.output, "entries (7):"));
  EXPECT_TRUE(contains(info.output, "forward  (arena 256 B, 2 kernel launches)"));
  EXPECT_TRUE(contains(info.output, "in   pos  I32  []")) << info.output;
  EXPECT_TRUE(contains(info.output, "big_arena  (arena 64.00 MiB"));
  EXPECT_TRUE(contains(info.output, "parameters: 4 tensors, 56 elements, 224 B (1 frozen)"));
  EXPECT_TRUE(contains(info.output, "state: 2 tensors, 24 B"));
  EXPECT_FALSE(contains(info.output, "orthogonal(1.0)"));
  Result verbose = run({kModel, "info", "--verbose"});
  ASSERT_EQ(verbose.code, 0);
  EXPECT_TRUE(contains(verbose.output, "proj.weight  F32  [4, 4]  64 B   orthogonal(1.0)    frozen"))
      << verbose.output;
}

TEST_F(TfcRunTest, BadModelsAreClearErrors) {
  std::ofstream(file("model.so")) << "garbage";
  Result garbage = run({file("model.so"), "info"});
  EXPECT_EQ(garbage.code, 1);
  EXPECT_EQ(garbage.output,
            "tfc-run: error: " + file("model.so") + ": not a shared object (bad ELF magic)\n");
  Result missing = run({file("nope.so"), "info"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(contains(missing.output, "nope.so: no such file"));
  Result version = run({std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_break_2.so", "info"});
  EXPECT_EQ(version.code, 1);
  EXPECT_TRUE(contains(version.output, "recompile the model with this tfc"));
}

TEST_F(TfcRunTest, InitWritesDeterministicWeights) {
  std::string a = initWeights("a.safetensors");
  std::string b = initWeights("b.safetensors");
  EXPECT_EQ(readAll(a), readAll(b));
  Result other = run({kModel, "init", "--seed", "4", "-o", file("c.safetensors")});
  ASSERT_EQ(other.code, 0);
  EXPECT_TRUE(contains(other.output, "wrote " + file("c.safetensors") + ": 4 parameters"));
  EXPECT_NE(readAll(a), readAll(file("c.safetensors")));
  auto weights = tfc::SafetensorsFile::open(a);
  ASSERT_OK(weights);
  EXPECT_EQ(weights->tensors().size(), 4u);
  EXPECT_EQ(run({kModel, "init"}).code, 2);
  EXPECT_EQ(run({kModel, "init", "--seed", "x", "-o", file("d.safetensors")}).code, 2);
  Result badDir = run({kModel, "init", "-o", file("no/such/dir/w.safetensors")});
  EXPECT_EQ(badDir.code, 1);
  EXPECT_TRUE(contains(badDir.output, "tfc-run: error: ")) << badDir.output;
}

TEST_F(TfcRunTest, CallWritesOutputs) {
  std::string weights = initWeights();
  std::string x = writeF32("x.npy", {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  ASSERT_EQ(mkdir(file("out").c_str(), 0755), 0);
  Result call = run({kModel, "call", "forward", "--weights", weights, "--in", "x=" + x,
                     "--out-dir", file("out"), "--threads", "2"});
  ASSERT_EQ(call.code, 0) << call.output;
  EXPECT_TRUE(contains(call.output, "wrote " + file("out") + "/y.npy (F32 [2, 4])"));
  EXPECT_EQ(readF32(file("out/y.npy")), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST_F(TfcRunTest, CallCarriesStateAndInlineScalars) {
  std::string weights = initWeights();
  std::string x = writeF32("x.npy", {4}, {1, 2, 3, 4});
  std::string state = file("state.safetensors");
  Result first = run({kModel, "call", "decode", "--weights", weights, "--in", "pos=3", "--in",
                      "x=" + x, "--out-dir", dir_, "--state-out", state});
  ASSERT_EQ(first.code, 0) << first.output;
  Result second = run({kModel, "call", "decode", "--weights", weights, "--in", "pos=4", "--in",
                       "x=" + x, "--out-dir", dir_, "--state-in", state});
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_EQ(readF32(file("y.npy")), (std::vector<float>{2, 4, 6, 8}));
}

TEST_F(TfcRunTest, CallUpdatesWeightsAndPrintsScalars) {
  std::string weights = initWeights();
  std::string delta = writeF32("delta.npy", {4}, {1, 1, 1, 1});
  Result call = run({kModel, "call", "update", "--weights", weights, "--in", "delta=" + delta,
                     "--out-dir", dir_, "--weights-out", file("w2.safetensors")});
  ASSERT_EQ(call.code, 0) << call.output;
  EXPECT_TRUE(contains(call.output, "sum.npy (F32 []) = 8")) << call.output;
  auto saved = tfc::SafetensorsFile::open(file("w2.safetensors"));
  ASSERT_OK(saved);
  auto scale = saved->load("scale");
  ASSERT_OK(scale);
  EXPECT_EQ(scale->dataAs<float>()[0], 2.0f);
}

TEST_F(TfcRunTest, CallErrorsAreClearAndWriteNothing) {
  std::string weights = initWeights();
  std::string x4 = writeF32("x4.npy", {4}, {1, 2, 3, 4});
  std::string x25 = writeF32("x25.npy", {2, 5}, std::vector<float>(10, 0.0f));
  ASSERT_EQ(mkdir(file("out").c_str(), 0755), 0);
  auto expectError = [&](std::vector<std::string> args, int code, const std::string& part) {
    Result result = run(args);
    EXPECT_EQ(result.code, code) << result.output;
    EXPECT_TRUE(contains(result.output, "tfc-run: error: " )) << result.output;
    EXPECT_TRUE(contains(result.output, part)) << result.output;
  };
  std::vector<std::string> decode = {kModel, "call", "decode", "--weights", weights,
                                     "--out-dir", file("out"), "--in", "x=" + x4};
  auto with = [](std::vector<std::string> base, std::vector<std::string> more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
  };
  expectError(with(decode, {"--in", "pos=17"}), 1,
              "entry 'decode': position 17 is out of range [0, 16)");
  expectError(with(decode, {"--in", "pos=abc"}), 1, "input 'pos' is I32; 'abc' is not an integer");
  expectError(with(decode, {"--in", "pos=2.5"}), 1, "'2.5' is not an integer");
  expectError(with(decode, {"--in", "poss=2"}), 1,
              "entry 'decode' has no input 'poss' (inputs: pos, x); did you mean 'pos'?");
  expectError(decode, 2, "entry 'decode' needs --in for: pos (I32 [])");
  expectError({kModel, "call", "forward", "--weights", weights, "--in", "x=" + x25, "--out-dir",
               file("out")},
              1, x25 + ": entry 'forward' input 'x' has shape [2, 5], expected [2, 4]");
  expectError({kModel, "call", "forward", "--weights", weights, "--in", "x=3", "--out-dir",
               file("out")},
              1, "inline values are for 0-d inputs only");
  expectError({kModel, "call", "forwrd", "--weights", weights}, 1,
              "no entry 'forwrd' in " + kModel +
                  " (entries: forward, decode, update, double, fail, fail_silent, big_arena); "
                  "did you mean 'forward'?");
  expectError({kModel, "call", "fail"}, 2, "missing --weights");
  expectError({kModel, "call", "fail", "--weights", weights}, 1, "token id 99 is out of range");
  // A missing output directory is created; an existing file is refused.
  expectError({kModel, "call", "forward", "--weights", weights, "--in", "x=" + x4, "--out-dir",
               x4},
              1, "x4.npy: not a directory");
  expectError({kModel, "call", "forward", "--weights", x4, "--in", "x=" + x4}, 1, "x4.npy");
  // Misnamed weights.
  auto good = tfc::SafetensorsFile::open(weights);
  ASSERT_OK(good);
  std::vector<tfc::NamedTensorView> tensors;
  for (const auto& tensor : good->tensors()) {
    tensors.push_back({tensor.name == "embed" ? "embd" : tensor.name, tensor.view()});
  }
  ASSERT_OK(tfc::writeSafetensors(file("bad.safetensors"), tensors));
  expectError({kModel, "call", "fail", "--weights", file("bad.safetensors")}, 1,
              "unexpected tensor 'embd' (no parameter of that name; did you mean 'embed'?)");
  EXPECT_FALSE(exists(file("out/y.npy")));
}

TEST_F(TfcRunTest, InspectListsTensors) {
  std::string weights = initWeights();
  Result inspect = run({"inspect", weights});
  ASSERT_EQ(inspect.code, 0) << inspect.output;
  EXPECT_TRUE(contains(inspect.output, "safetensors, 4 tensors, 224 B")) << inspect.output;
  EXPECT_TRUE(contains(inspect.output, "proj.weight  F32    [4, 4]  64")) << inspect.output;
  EXPECT_TRUE(contains(inspect.output, "format: pt"));
  std::string x = writeF32("x.npy", {2, 2}, {1, 2.5f, 3, 4});
  Result npy = run({"inspect", x, "--values", "3"});
  ASSERT_EQ(npy.code, 0) << npy.output;
  EXPECT_TRUE(contains(npy.output, "npy, F32 [2, 2], 16 B")) << npy.output;
  EXPECT_TRUE(contains(npy.output, "values: 1, 2.5, 3, ...")) << npy.output;
  std::ofstream(file("junk.safetensors")) << "junk";
  Result junk = run({"inspect", file("junk.safetensors")});
  EXPECT_EQ(junk.code, 1);
  EXPECT_TRUE(contains(junk.output, "tfc-run: error: " + file("junk.safetensors")));
  EXPECT_EQ(run({"inspect"}).code, 2);
  EXPECT_EQ(run({kModel, "inspect", weights}).code, 2);
}

}  // namespace
