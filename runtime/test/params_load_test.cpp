// Tests how tfc_params_load_safetensors holds the weights: tensors aligned in the file are
// used in place from a private copy-on-write mapping, the others are copied, and either
// way the values equal the file's; writes (train_step, set) never reach the file; storage
// once handed out never moves; a bad file is refused as before.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fake_artifacts.hpp"
#include "test_util.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/safetensors.hpp"
#include "tfc/runtime/train_step.hpp"

namespace tfc {
namespace {

using testing::fakeArtifact;
using testing::isError;
using testing::TempDir;

// The file that the mapping holding |address| maps, from /proc/self/maps ("" for anonymous
// memory such as the heap; " (deleted)" follows a file removed since).
std::string mappedFile(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto target = reinterpret_cast<uintptr_t>(address);
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &begin, &end) != 2) continue;
    if (target < begin || target >= end) continue;
    // address perms offset dev inode path: the path starts at the first '/', if any.
    size_t slash = line.find('/');
    return slash == std::string::npos ? "" : line.substr(slash);
  }
  return "";
}

std::string realPath(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  std::string result = resolved != nullptr ? resolved : path;
  std::free(resolved);
  return result;
}

// Rewrites the safetensors file at |path| with |spaces| more spaces of header padding, which
// moves every tensor by that many bytes (8: no tensor stays 64-byte aligned).
void padHeader(const std::string& path, size_t spaces) {
  std::string bytes = testing::readBytes(path);
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i) headerSize = (headerSize << 8) | static_cast<uint8_t>(bytes[i]);
  bytes.insert(8 + headerSize, spaces, ' ');
  headerSize += spaces;
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(headerSize >> (8 * i));
  testing::writeBytes(path, bytes);
}

class ParamsLoadTest : public ::testing::Test {
 protected:
  // Opens |model|, fills its parameters with random bytes (never zeros, unlike a fresh
  // params' storage) and saves them to |path_|.
  void writeRandomWeights(const std::string& model) {
    auto artifact = Artifact::open(fakeArtifact(model));
    ASSERT_OK(artifact);
    artifact_ = *artifact;
    auto params = Params::create(artifact_);
    ASSERT_OK(params);
    for (int32_t i = 0; i < artifact_.paramCount(); ++i) {
      auto ref = params->tensor(i);
      ASSERT_OK(ref);
      // Finite floats: a random exponent could make NaNs, which compare unequal.
      auto* values = static_cast<float*>(ref->data);
      for (size_t k = 0; k < ref->byte_size / sizeof(float); ++k) {
        values[k] = std::uniform_real_distribution<float>(-1.0f, 1.0f)(random_.engine);
      }
      ASSERT_OK(params->markSet(i));
    }
    written_ = *params;
    path_ = dir_.file("w.safetensors");
    ASSERT_OK(written_.saveSafetensors(path_));
  }

  Params load(bool copy = false) {
    auto params = Params::create(artifact_);
    EXPECT_OK(params);
    tfc_params_load_options_t options;
    tfc_params_load_options_initialize(&options);
    options.copy = copy;
    EXPECT_OK(params->loadSafetensors(path_, &options));
    return *params;
  }

  // Expects every parameter of |params| to hold the values written to the file.
  void expectWrittenValues(const Params& params) {
    for (int32_t i = 0; i < artifact_.paramCount(); ++i) {
      auto expected = written_.tensor(i);
      auto loaded = params.tensor(i);
      ASSERT_OK(expected);
      ASSERT_OK(loaded);
      ASSERT_EQ(loaded->byte_size, expected->byte_size);
      EXPECT_EQ(std::memcmp(loaded->data, expected->data, expected->byte_size), 0)
          << artifact_.param(i).name;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(loaded->data) % TFC_ARENA_ALIGNMENT, 0u);
    }
  }

  bool isMapped(const Params& params, int32_t index) {
    auto ref = params.tensor(index);
    EXPECT_OK(ref);
    return mappedFile(ref->data) == realPath(path_);
  }

  testing::Random random_;
  TempDir dir_;
  Artifact artifact_;
  Params written_;
  std::string path_;
};

// fake_model's parameters: proj.weight [4, 4] and embed [8, 4] (64 and 128 bytes: whole
// lines, written first and aligned), then bias [4] at byte 192 (aligned by chance) and
// scale [4] at 208 (not aligned).
TEST_F(ParamsLoadTest, AlignedTensorsAreMappedTheOthersCopiedAllEqual) {
  SCOPED_TRACE(random_.trace());
  writeRandomWeights("fake_model");
  Params params = load();
  expectWrittenValues(params);
  EXPECT_OK(params.checkAllSet());
  auto file = SafetensorsFile::open(path_);
  ASSERT_OK(file);
  int copied = 0;
  for (int32_t i = 0; i < artifact_.paramCount(); ++i) {
    const tfc_tensor_desc_t& desc = artifact_.param(i);
    bool aligned = file->find(desc.name)->fileOffset % TFC_ARENA_ALIGNMENT == 0;
    EXPECT_EQ(isMapped(params, i), aligned) << desc.name;
    if (tfc_tensor_desc_byte_size(&desc) % kSafetensorsWriteAlignment == 0) {
      EXPECT_TRUE(aligned) << desc.name;
    }
    copied += aligned ? 0 : 1;
  }
  EXPECT_EQ(copied, 1);  // scale
}

TEST_F(ParamsLoadTest, CopyOptionCopiesEveryTensor) {
  SCOPED_TRACE(random_.trace());
  writeRandomWeights("fake_model");
  Params params = load(/*copy=*/true);
  expectWrittenValues(params);
  for (int32_t i = 0; i < artifact_.paramCount(); ++i) EXPECT_FALSE(isMapped(params, i));
}

TEST_F(ParamsLoadTest, MisalignedTensorsAreCopiedWithEqualValues) {
  SCOPED_TRACE(random_.trace());
  writeRandomWeights("fake_model");
  padHeader(path_, 8);
  Params params = load();
  expectWrittenValues(params);
  for (int32_t i = 0; i < artifact_.paramCount(); ++i) EXPECT_FALSE(isMapped(params, i));
}

// Storage handed out before a load must not move: the load copies into it, and the pointer
// sees the file's values.
TEST_F(ParamsLoadTest, StorageHandedOutBeforeALoadStaysAndSeesTheValues) {
  SCOPED_TRACE(random_.trace());
  writeRandomWeights("fake_model");
  auto params = Params::create(artifact_);
  ASSERT_OK(params);
  auto before = params->tensor(3);  // embed, which a fresh params would map
  ASSERT_OK(before);
  ASSERT_OK(params->loadSafetensors(path_));
  auto after = params->tensor(3);
  ASSERT_OK(after);
  EXPECT_EQ(after->data, before->data);
  EXPECT_FALSE(isMapped(*params, 3));
  expectWrittenValues(*params);
}

// The mapping belongs to the params: removing the file, or replacing it as every writer of
// this library does (rename), leaves the loaded values as they were.
TEST_F(ParamsLoadTest, MappedValuesOutliveTheFileAndItsReplacement) {
  SCOPED_TRACE(random_.trace());
  writeRandomWeights("fake_model");
  Params params = load();
  ASSERT_TRUE(isMapped(params, 3));
  auto other = Params::create(artifact_);
  ASSERT_OK(other);
  ASSERT_OK(other->init(7));
  ASSERT_OK(other->saveSafetensors(path_));  // replaces the file by rename
  expectWrittenValues(params);
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  expectWrittenValues(params);
}

// fake_train's parameters, wte [16, 16] and bias [16], are whole lines: both mapped. A
// training step writes them in place through the copy-on-write mapping: the file keeps
// its bytes, and the step's results equal those of a copied load bit for bit.
TEST_F(ParamsLoadTest, TrainingStepsWriteMappedParametersButNeverTheFile) {
  SCOPED_TRACE(random_.trace());
  writeRandomWeights("fake_train");
  const std::string fileBefore = testing::readBytes(path_);
  std::vector<std::vector<uint8_t>> results;
  for (bool copy : {false, true}) {
    Params params = load(copy);
    for (int32_t i = 0; i < artifact_.paramCount(); ++i) EXPECT_EQ(isMapped(params, i), !copy);
    auto context = Context::create(artifact_, params);
    ASSERT_OK(context);
    auto step = TrainStep::create(artifact_);
    ASSERT_OK(step);
    for (size_t d = 0; d < step->numDataInputs(); ++d) {
      HostTensor& input = step->dataInput(d);
      auto* ids = input.mutableDataAs<int32_t>();
      for (int64_t k = 0; k < input.numElements(); ++k) ids[k] = static_cast<int32_t>((k * 7) % 16);
    }
    HyperParams hyper;
    hyper.lr = 0.1;
    step->setHyperParams(hyper);
    for (int s = 0; s < 2; ++s) ASSERT_OK(step->step(*context));
    std::vector<uint8_t> values;
    for (int32_t i = 0; i < artifact_.paramCount(); ++i) {
      auto ref = params.tensor(i);
      ASSERT_OK(ref);
      const auto* bytes = static_cast<const uint8_t*>(ref->data);
      values.insert(values.end(), bytes, bytes + ref->byte_size);
    }
    results.push_back(values);
    EXPECT_EQ(testing::readBytes(path_), fileBefore) << (copy ? "copied" : "mapped");
  }
  EXPECT_EQ(results[0], results[1]);
  // The step changed the values (or the test would prove nothing).
  auto original = SafetensorsFile::open(path_);
  ASSERT_OK(original);
  const SafetensorsTensorInfo* wte = original->find(artifact_.param(0).name);
  ASSERT_NE(wte, nullptr);
  EXPECT_NE(std::memcmp(results[0].data(), wte->data, wte->byteSize), 0);
}

// A second load writes into the first load's mapping (copy-on-write), never into either
// file; a set does too.
TEST_F(ParamsLoadTest, LaterWritesToMappedParametersLeaveTheFileAlone) {
  SCOPED_TRACE(random_.trace());
  writeRandomWeights("fake_model");
  const std::string fileBefore = testing::readBytes(path_);
  Params params = load();
  ASSERT_TRUE(isMapped(params, 3));
  auto other = Params::create(artifact_);
  ASSERT_OK(other);
  ASSERT_OK(other->init(7));
  const std::string otherPath = dir_.file("other.safetensors");
  ASSERT_OK(other->saveSafetensors(otherPath));
  const std::string otherBefore = testing::readBytes(otherPath);
  ASSERT_OK(params.loadSafetensors(otherPath));
  EXPECT_TRUE(isMapped(params, 3));  // still the first file's mapping, now holding copies
  for (int32_t i = 0; i < artifact_.paramCount(); ++i) {
    auto expected = other->tensor(i);
    auto loaded = params.tensor(i);
    ASSERT_OK(expected);
    ASSERT_OK(loaded);
    EXPECT_EQ(std::memcmp(loaded->data, expected->data, expected->byte_size), 0);
  }
  std::vector<float> zeros(32, 0.0f);
  ASSERT_OK(params.set(3, TensorView{TFC_DTYPE_F32, {8, 4}, zeros.data(), 128}));
  EXPECT_EQ(testing::readBytes(path_), fileBefore);
  EXPECT_EQ(testing::readBytes(otherPath), otherBefore);
}

// A truncated or hostile file is refused with the reader's message, naming the file, and
// changes nothing.
TEST_F(ParamsLoadTest, BadFilesAreRefusedAsBefore) {
  SCOPED_TRACE(random_.trace());
  writeRandomWeights("fake_model");
  std::string bytes = testing::readBytes(path_);
  const std::string truncated = dir_.file("truncated.safetensors");
  testing::writeBytes(truncated, bytes.substr(0, bytes.size() - 4));
  auto params = Params::create(artifact_);
  ASSERT_OK(params);
  EXPECT_TRUE(isError(params->loadSafetensors(truncated), TFC_DATA_LOSS, truncated,
                      "out of range"));
  const std::string hostile = dir_.file("hostile.safetensors");
  testing::writeBytes(hostile, testing::safetensorsBytes(
                                   R"({"embed":{"dtype":"F32","shape":[8,4],)"
                                   R"("data_offsets":[0,1000000]}})", 16));
  EXPECT_TRUE(isError(params->loadSafetensors(hostile), TFC_DATA_LOSS, hostile,
                      "out of range"));
  const std::string tiny = dir_.file("tiny.safetensors");
  testing::writeBytes(tiny, "abc");
  EXPECT_TRUE(isError(params->loadSafetensors(tiny), TFC_DATA_LOSS, tiny, "too short"));
  for (int32_t i = 0; i < artifact_.paramCount(); ++i) EXPECT_FALSE(params->isSet(i));
}

}  // namespace
}  // namespace tfc
