// Tests tfc_params_load_pretrained on checkpoints written as Hugging Face writes them: one
// model.safetensors, or shards under an index, with tensors in F32, BF16 or F16 whatever
// the parameters' dtypes, prefixed names and buffers that are not parameters. The values
// loaded are checked against the reference conversions of float_reference.hpp; every error
// of runtime.h's list is provoked and must leave loaded parameters as they were.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fake_artifacts.hpp"
#include "float_reference.hpp"
#include "test_util.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/safetensors.hpp"

namespace tfc {
namespace {

using namespace testing::reference;
using testing::fakeArtifact;
using testing::isError;
using testing::TempDir;

// fake_pretrained's parameters (fake_pretrained_artifact.c).
const char* const kEmbed = "model.embed_tokens.weight";         // F32 [16, 8]
const char* const kQuery = "model.layers.0.self_attn.q_proj.weight";  // BF16 [8, 8]
const char* const kLayerNorm = "model.layers.0.input_layernorm.weight";  // F16 [8]
const char* const kNorm = "model.norm.weight";                 // F32 [8]
const char* const kHead = "lm_head.weight";                    // BF16 [16, 8]

// A tensor to write: its dtype, shape and bytes.
struct FileTensor {
  tfc_dtype_t dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// The value of element |i| of |tensor| as an F32 (exact for every dtype written here).
float elementValue(const FileTensor& tensor, size_t i) {
  if (tensor.dtype == TFC_DTYPE_F32) {
    float value;
    std::memcpy(&value, tensor.bytes.data() + 4 * i, 4);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, tensor.bytes.data() + 2 * i, 2);
  return static_cast<float>(tensor.dtype == TFC_DTYPE_BF16 ? decodeBf16(bits) : decodeF16(bits));
}

// The bytes a parameter of |dtype| must hold after loading |tensor|.
std::vector<uint8_t> expectedBytes(const FileTensor& tensor, tfc_dtype_t dtype) {
  if (tensor.dtype == dtype) return tensor.bytes;
  size_t count = tensor.bytes.size() / tfc_dtype_size(tensor.dtype);
  std::vector<uint8_t> bytes(count * tfc_dtype_size(dtype));
  for (size_t i = 0; i < count; ++i) {
    float value = elementValue(tensor, i);
    if (dtype == TFC_DTYPE_F32) {
      std::memcpy(bytes.data() + 4 * i, &value, 4);
    } else {
      uint16_t bits = dtype == TFC_DTYPE_BF16 ? referenceF32ToBf16(value) : referenceF32ToF16(value);
      std::memcpy(bytes.data() + 2 * i, &bits, 2);
    }
  }
  return bytes;
}

std::string mappedFile(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto target = reinterpret_cast<uintptr_t>(address);
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &begin, &end) != 2) continue;
    if (target < begin || target >= end) continue;
    size_t slash = line.find('/');
    return slash == std::string::npos ? "" : line.substr(slash);
  }
  return "";
}

class PretrainedLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto artifact = Artifact::open(fakeArtifact("fake_pretrained"));
    ASSERT_OK(artifact);
    artifact_ = *artifact;
  }

  // Random values in |dtype| (never zero; F32 exponents from 2^-27 to 2^23, so that
  // narrowing meets F16's subnormals and overflow), as the tensor |name| of the checkpoint.
  void addTensor(const std::string& name, tfc_dtype_t dtype, std::vector<int64_t> shape) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    FileTensor tensor{dtype, shape, std::vector<uint8_t>(count * tfc_dtype_size(dtype))};
    std::uniform_int_distribution<uint32_t> exponent(100, 150), mantissa(0, (1u << 23) - 1),
        sign(0, 1);
    if (dtype != TFC_DTYPE_F32 && dtype != TFC_DTYPE_BF16 && dtype != TFC_DTYPE_F16) {
      random_.fill(tensor.bytes.data(), tensor.bytes.size());  // a buffer, an index
      count = 0;
    }
    for (int64_t i = 0; i < count; ++i) {
      float value = fromBits((sign(random_.engine) << 31) | (exponent(random_.engine) << 23) |
                             mantissa(random_.engine));
      if (dtype == TFC_DTYPE_F32) {
        std::memcpy(tensor.bytes.data() + 4 * i, &value, 4);
      } else {
        uint16_t bits = dtype == TFC_DTYPE_BF16 ? tfc_f32_to_bf16(value) : tfc_f32_to_f16(value);
        if ((bits & 0x7FFF) == 0) bits |= 1;  // no zeros
        std::memcpy(tensor.bytes.data() + 2 * i, &bits, 2);
      }
    }
    tensors_[name] = std::move(tensor);
  }

  // Every parameter of fake_pretrained, stored in |dtype| (the artifact's own when INVALID),
  // named with |prefix| in front.
  void addModel(tfc_dtype_t dtype, const std::string& prefix = "") {
    for (int32_t i = 0; i < artifact_.paramCount(); ++i) {
      const tfc_tensor_desc_t& desc = artifact_.param(i);
      addTensor(prefix + desc.name,
                dtype == TFC_DTYPE_INVALID ? static_cast<tfc_dtype_t>(desc.dtype) : dtype,
                shapeOf(desc));
    }
  }

  // Writes the tensors |names| (all when empty) to |path|.
  void writeFile(const std::string& path, std::vector<std::string> names = {}) {
    if (names.empty()) {
      for (const auto& entry : tensors_) names.push_back(entry.first);
    }
    std::vector<NamedTensorView> views;
    for (const std::string& name : names) {
      const FileTensor& tensor = tensors_.at(name);
      views.push_back({name, TensorView{tensor.dtype, tensor.shape, tensor.bytes.data(),
                                        tensor.bytes.size()}});
    }
    ASSERT_OK(writeSafetensors(path, views, {{"format", "pt"}}));
  }

  // Writes every tensor in shards of at most |perShard| tensors, and an index for them.
  void writeSharded(const std::string& directory, size_t perShard) {
    std::vector<std::string> names;
    for (const auto& entry : tensors_) names.push_back(entry.first);
    size_t shards = (names.size() + perShard - 1) / perShard;
    std::string map;
    for (size_t s = 0; s < shards; ++s) {
      char shard[64];
      std::snprintf(shard, sizeof(shard), "model-%05zu-of-%05zu.safetensors", s + 1, shards);
      std::vector<std::string> part(names.begin() + s * perShard,
                                    names.begin() + std::min(names.size(), (s + 1) * perShard));
      writeFile(directory + "/" + shard, part);
      for (const std::string& name : part) {
        map += std::string(map.empty() ? "" : ",\n    ") + "\"" + name + "\": \"" + shard + "\"";
      }
    }
    writeIndex(directory, "{\n  \"metadata\": {\"total_size\": 1234},\n  \"weight_map\": {\n    " +
                              map + "\n  }\n}\n");
  }

  void writeIndex(const std::string& directory, const std::string& text) {
    testing::writeBytes(directory + "/model.safetensors.index.json", text);
  }

  // Expects parameter |name| of |params| to hold the checkpoint's tensor |tensor|, converted.
  void expectLoaded(const Params& params, const std::string& name, const std::string& tensor) {
    auto index = artifact_.findParam(name);
    ASSERT_OK(index);
    auto ref = params.tensor(*index);
    ASSERT_OK(ref);
    std::vector<uint8_t> expected =
        expectedBytes(tensors_.at(tensor), static_cast<tfc_dtype_t>(artifact_.param(*index).dtype));
    ASSERT_EQ(ref->byte_size, expected.size());
    EXPECT_EQ(std::memcmp(ref->data, expected.data(), expected.size()), 0)
        << name << " from " << tensor << " (" << tfc_dtype_name(tensors_.at(tensor).dtype) << ")";
  }

  void expectAllLoaded(const Params& params, const std::string& prefix = "") {
    EXPECT_OK(params.checkAllSet());
    for (int32_t i = 0; i < artifact_.paramCount(); ++i) {
      expectLoaded(params, artifact_.param(i).name, prefix + artifact_.param(i).name);
    }
  }

  Params create() {
    auto params = Params::create(artifact_);
    EXPECT_OK(params);
    return *params;
  }

  // The parameters' bytes, to check that a failed load changed nothing.
  std::vector<std::vector<uint8_t>> snapshot(const Params& params) {
    std::vector<std::vector<uint8_t>> bytes;
    for (int32_t i = 0; i < artifact_.paramCount(); ++i) {
      auto ref = params.tensor(i);
      EXPECT_OK(ref);
      const auto* data = static_cast<const uint8_t*>(ref->data);
      bytes.emplace_back(data, data + ref->byte_size);
    }
    return bytes;
  }

  testing::Random random_;
  TempDir dir_;
  Artifact artifact_;
  std::map<std::string, FileTensor> tensors_;
};

// Every pairing of a checkpoint dtype with the parameters' dtypes (F32, BF16, F16 params).
TEST_F(PretrainedLoadTest, EveryDtypeConvertsToTheParameters) {
  SCOPED_TRACE(random_.trace());
  for (tfc_dtype_t dtype : {TFC_DTYPE_F32, TFC_DTYPE_BF16, TFC_DTYPE_F16}) {
    SCOPED_TRACE(tfc_dtype_name(dtype));
    tensors_.clear();
    addModel(dtype);
    writeFile(dir_.file("model.safetensors"));
    Params params = create();
    auto report = params.loadPretrained(dir_.path());
    ASSERT_OK(report);
    expectAllLoaded(params);
    ASSERT_EQ(report->size(), 5u);
    for (const PretrainedTensor& tensor : *report) {
      EXPECT_EQ(tensor.dtype, dtype);
      EXPECT_EQ(tensor.file, dir_.file("model.safetensors"));
      ASSERT_GE(tensor.paramIndex, 0);
      EXPECT_EQ(tensor.name, artifact_.param(tensor.paramIndex).name);
    }
  }
}

TEST_F(PretrainedLoadTest, ADirectoryAnIndexAndAFileLoadTheSameValues) {
  SCOPED_TRACE(random_.trace());
  addModel(TFC_DTYPE_BF16);
  TempDir single, sharded;
  writeFile(single.file("model.safetensors"));
  writeSharded(sharded.path(), 2);  // 3 shards
  for (const std::string& path :
       {single.path(), single.file("model.safetensors"), sharded.path(),
        sharded.file("model.safetensors.index.json")}) {
    SCOPED_TRACE(path);
    Params params = create();
    auto report = params.loadPretrained(path);
    ASSERT_OK(report);
    expectAllLoaded(params);
    std::set<std::string> files;
    for (const PretrainedTensor& tensor : *report) files.insert(tensor.file);
    EXPECT_EQ(files.size(), path.find(sharded.path()) == 0 ? 3u : 1u);
  }
}

// Tensors of the parameter's dtype are used in place from the file, as by
// tfc_params_load_safetensors when aligned; converted ones are copies.
TEST_F(PretrainedLoadTest, SameDtypeAlignedTensorsAreMappedConvertedOnesCopied) {
  SCOPED_TRACE(random_.trace());
  addModel(TFC_DTYPE_F32);
  writeSharded(dir_.path(), 3);
  Params params = create();
  ASSERT_OK(params.loadPretrained(dir_.path()));
  expectAllLoaded(params);
  for (const char* name : {kEmbed, kQuery, kHead}) {
    auto index = artifact_.findParam(name);
    ASSERT_OK(index);
    auto ref = params.tensor(*index);
    ASSERT_OK(ref);
    bool f32 = artifact_.param(*index).dtype == TFC_ABI_F32;
    // [16, 8] F32 is 512 bytes: aligned in the file.
    EXPECT_EQ(mappedFile(ref->data).find(".safetensors") != std::string::npos, f32) << name;
  }
  Params copied = create();
  ASSERT_OK(copied.loadPretrained(dir_.path(), /*copy=*/true));
  auto ref = copied.tensor(0);
  ASSERT_OK(ref);
  EXPECT_EQ(mappedFile(ref->data).find(".safetensors"), std::string::npos);
  expectAllLoaded(copied);
}

TEST_F(PretrainedLoadTest, ALeadingPrefixIsDropped) {
  SCOPED_TRACE(random_.trace());
  addModel(TFC_DTYPE_F16, "transformer.");
  writeFile(dir_.file("model.safetensors"));
  Params params = create();
  auto report = params.loadPretrained(dir_.path());
  ASSERT_OK(report);
  expectAllLoaded(params, "transformer.");
  for (const PretrainedTensor& tensor : *report) {
    ASSERT_GE(tensor.paramIndex, 0);
    EXPECT_EQ(tensor.name, "transformer." + std::string(artifact_.param(tensor.paramIndex).name));
  }
}

// "P.N" binds N only without a tensor N; a prefix is one component; two candidates (two
// prefixed ones, or an exact one and a prefixed one) are an error that names both.
TEST_F(PretrainedLoadTest, ExactNamesAndPrefixesAreBoundOnlyWhenUnambiguous) {
  SCOPED_TRACE(random_.trace());
  addModel(TFC_DTYPE_INVALID);
  addTensor(std::string("a.b.") + kEmbed, TFC_DTYPE_F32, {16, 8});  // two components
  writeFile(dir_.file("model.safetensors"));
  Params params = create();
  auto report = params.loadPretrained(dir_.path());
  ASSERT_OK(report);
  expectAllLoaded(params);
  std::vector<std::string> skipped;
  for (const PretrainedTensor& tensor : *report) {
    if (tensor.paramIndex < 0) skipped.push_back(tensor.name);
  }
  EXPECT_EQ(skipped, (std::vector<std::string>{std::string("a.b.") + kEmbed}));

  // Issue 29: "wte.weight" and "transformer.wte.weight" both loaded the exact one silently.
  addTensor(std::string("base.") + kNorm, TFC_DTYPE_F32, {8});
  writeFile(dir_.file("model.safetensors"));
  Params both = create();
  EXPECT_TRUE(isError(both.loadPretrained(dir_.path()).status(), TFC_INVALID_ARGUMENT,
                      "parameter 'model.norm.weight' could be any of the tensors",
                      "'model.norm.weight', 'base.model.norm.weight'"));

  tensors_.erase(kNorm);
  addTensor(std::string("other.") + kNorm, TFC_DTYPE_F32, {8});
  writeFile(dir_.file("model.safetensors"));
  Params ambiguous = create();
  EXPECT_TRUE(isError(ambiguous.loadPretrained(dir_.path()).status(), TFC_INVALID_ARGUMENT,
                      "parameter 'model.norm.weight' could be any of the tensors",
                      "'base.model.norm.weight', 'other.model.norm.weight'"));
}

// Buffers that are not parameters (GPT-2's attention masks, LLaMA's inv_freq, a tied
// head the model lacks) are skipped and reported, never an error.
TEST_F(PretrainedLoadTest, TensorsThatAreNotParametersAreSkippedAndReported) {
  SCOPED_TRACE(random_.trace());
  addModel(TFC_DTYPE_BF16);
  addTensor("model.layers.0.self_attn.rotary_emb.inv_freq", TFC_DTYPE_F32, {4});
  addTensor("h.0.attn.masked_bias", TFC_DTYPE_F32, {});
  addTensor("h.0.attn.bias", TFC_DTYPE_U8, {1, 1, 4, 4});
  addTensor("step", TFC_DTYPE_I64, {});
  writeSharded(dir_.path(), 4);
  Params params = create();
  auto report = params.loadPretrained(dir_.path());
  ASSERT_OK(report);
  expectAllLoaded(params);
  std::map<std::string, tfc_dtype_t> skipped;
  for (const PretrainedTensor& tensor : *report) {
    if (tensor.paramIndex < 0) skipped[tensor.name] = tensor.dtype;
  }
  EXPECT_EQ(skipped, (std::map<std::string, tfc_dtype_t>{
                         {"h.0.attn.bias", TFC_DTYPE_U8},
                         {"h.0.attn.masked_bias", TFC_DTYPE_F32},
                         {"model.layers.0.self_attn.rotary_emb.inv_freq", TFC_DTYPE_F32},
                         {"step", TFC_DTYPE_I64}}));
}

class PretrainedErrorTest : public PretrainedLoadTest {
 protected:
  void SetUp() override {
    PretrainedLoadTest::SetUp();
    addModel(TFC_DTYPE_F16);
    writeFile(good.file("model.safetensors"));
  }
  // Loads good weights, then |path|, which must fail with |code| and a message containing
  // |what| and |detail|; the parameters must keep the good weights.
  void expectRefusedUnchanged(const std::string& path, tfc_status_code_t code,
                              const std::string& what, const std::string& detail) {
    Params params = create();
    ASSERT_OK(params.loadPretrained(good.path(), /*copy=*/true));
    auto before = snapshot(params);
    EXPECT_TRUE(isError(params.loadPretrained(path).status(), code, what, detail));
    EXPECT_EQ(snapshot(params), before);
  }

  TempDir good;
};

TEST_F(PretrainedErrorTest, AMissingParameterIsNamedWithDtypeAndShape) {
  SCOPED_TRACE(random_.trace());
  auto head = std::move(tensors_.at(kHead));
  tensors_.erase(kHead);
  tensors_["lm_head.weights"] = std::move(head);
  writeSharded(dir_.path(), 2);
  expectRefusedUnchanged(dir_.path(), TFC_NOT_FOUND,
                           "missing parameter 'lm_head.weight' (BF16 [16, 8])",
                           "the checkpoint has 'lm_head.weights'");
}

TEST_F(PretrainedErrorTest, AWrongShapeNamesTensorShardAndBothShapes) {
  SCOPED_TRACE(random_.trace());
  addTensor(kNorm, TFC_DTYPE_BF16, {9});
  addTensor(kQuery, TFC_DTYPE_BF16, {8, 4});
  writeSharded(dir_.path(), 2);
  Params params = create();
  auto result = params.loadPretrained(dir_.path());
  const Status& status = result.status();
  EXPECT_TRUE(isError(status, TFC_INVALID_ARGUMENT, "model.safetensors.index.json: 2 problems",
                      "tensor 'model.norm.weight' in 'model-00003-of-00003.safetensors' has "
                      "shape [9], expected [8]"));
  EXPECT_TRUE(isError(status, TFC_INVALID_ARGUMENT, "2 problems",
                      "tensor 'model.layers.0.self_attn.q_proj.weight' in "
                      "'model-00002-of-00003.safetensors' has shape [8, 4], expected [8, 8]"));
  expectRefusedUnchanged(dir_.path(), TFC_INVALID_ARGUMENT, "has shape [9]", "expected [8]");
}

TEST_F(PretrainedErrorTest, ADtypeThatDoesNotConvertNamesTensorFileAndBothDtypes) {
  SCOPED_TRACE(random_.trace());
  for (tfc_dtype_t dtype : {TFC_DTYPE_I64, TFC_DTYPE_BOOL, TFC_DTYPE_F64, TFC_DTYPE_I8}) {
    SCOPED_TRACE(tfc_dtype_name(dtype));
    addTensor(kLayerNorm, dtype, {8});
    writeFile(dir_.file("model.safetensors"));
    expectRefusedUnchanged(dir_.path(), TFC_INVALID_ARGUMENT,
                             dir_.file("model.safetensors") +
                                 ": tensor 'model.layers.0.input_layernorm.weight' has dtype " +
                                 tfc_dtype_name(dtype) + ", expected F16",
                             "only F32, BF16 and F16 convert");
  }
}

TEST_F(PretrainedErrorTest, IndexProblems) {
  SCOPED_TRACE(random_.trace());
  writeSharded(dir_.path(), 2);
  const std::string index = dir_.file("model.safetensors.index.json");
  std::string text = testing::readBytes(index);

  writeIndex(dir_.path(), text.substr(0, text.size() - 4));
  expectRefusedUnchanged(dir_.path(), TFC_INVALID_ARGUMENT, index + ":", "expected");
  writeIndex(dir_.path(), "{\"metadata\": {}}");
  expectRefusedUnchanged(dir_.path(), TFC_INVALID_ARGUMENT, index, "no \"weight_map\"");
  writeIndex(dir_.path(), "{\"weight_map\": {\"" + std::string(kNorm) +
                              "\": \"../good/model.safetensors\"}}");
  expectRefusedUnchanged(dir_.path(), TFC_INVALID_ARGUMENT, index,
                           "leaves the index's directory");
  writeIndex(dir_.path(), "{\"weight_map\": {\"" + std::string(kNorm) + "\": \"" +
                              good.file("model.safetensors") + "\"}}");
  expectRefusedUnchanged(dir_.path(), TFC_INVALID_ARGUMENT, index, "is absolute");
  writeIndex(dir_.path(), text);

  // A shard that is not there: named, with a tensor it should hold.
  ASSERT_EQ(::rename(dir_.file("model-00002-of-00003.safetensors").c_str(),
                     dir_.file("moved").c_str()), 0);
  expectRefusedUnchanged(dir_.path(), TFC_NOT_FOUND,
                           index + ": shard 'model-00002-of-00003.safetensors' (which holds "
                                   "'model.layers.0.input_layernorm.weight' and 1 more)",
                           "cannot be read");
  ASSERT_EQ(::rename(dir_.file("moved").c_str(),
                     dir_.file("model-00002-of-00003.safetensors").c_str()), 0);

  // A tensor the index lists in a shard that lacks it, and one in two shards.
  std::string moved = text;
  size_t at = moved.find("\"model.norm.weight\": \"model-00003-of-00003");
  ASSERT_NE(at, std::string::npos);
  moved.replace(at + std::strlen("\"model.norm.weight\": \"model-0000"), 1, "1");
  writeIndex(dir_.path(), moved);
  expectRefusedUnchanged(dir_.path(), TFC_DATA_LOSS,
                           "the index lists tensor 'model.norm.weight' in "
                           "'model-00001-of-00003.safetensors', which does not have it",
                           index);
  writeIndex(dir_.path(), text);
  writeFile(dir_.file("model-00003-of-00003.safetensors"), {kQuery, kNorm});
  expectRefusedUnchanged(dir_.path(), TFC_DATA_LOSS,
                           "tensor 'model.layers.0.self_attn.q_proj.weight' is in two shards, "
                           "'model-00002-of-00003.safetensors' and "
                           "'model-00003-of-00003.safetensors'",
                           index);
}

TEST_F(PretrainedErrorTest, ADirectoryWithoutACheckpointSaysWhatItLookedFor) {
  testing::writeBytes(dir_.file("pytorch_model.bin"), "not a pickle");
  expectRefusedUnchanged(dir_.path(), TFC_NOT_FOUND,
                           "neither model.safetensors nor model.safetensors.index.json",
                           "pytorch_model.bin");
  expectRefusedUnchanged(dir_.file("nothing.safetensors"), TFC_NOT_FOUND,
                           "nothing.safetensors", "cannot open");
}

}  // namespace
}  // namespace tfc
