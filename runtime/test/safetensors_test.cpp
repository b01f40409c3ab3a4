// Tests the safetensors reader and writer: round trips for every dtype, the exact header
// layout, and one bad input for every validation rule.
#include "tfc/runtime/safetensors.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace tfc {
namespace {

using testing::isError;
using testing::Random;
using testing::TempDir;

// Makes a tensor of |dtype| and |shape| filled with fresh random data.
HostTensor randomTensor(Random& random, tfc_dtype_t dtype, std::vector<int64_t> shape) {
  StatusOr<HostTensor> tensor = HostTensor::allocate(dtype, std::move(shape));
  EXPECT_OK(tensor);
  if (dtype == TFC_DTYPE_BOOL) {
    random.fillBool(tensor->mutableData(), tensor->byteSize());
  } else {
    random.fill(tensor->mutableData(), tensor->byteSize());
  }
  return std::move(tensor).value();
}

void expectSameTensor(const TensorView& actual, const HostTensor& expected,
                      const std::string& name) {
  EXPECT_EQ(actual.dtype, expected.dtype()) << name;
  EXPECT_EQ(actual.shape, expected.shape()) << name;
  ASSERT_EQ(actual.byteSize, expected.byteSize()) << name;
  EXPECT_EQ(std::memcmp(actual.data, expected.data(), expected.byteSize()), 0) << name;
}

class SafetensorsRoundTrip : public ::testing::TestWithParam<bool> {};

// Tests that every dtype, scalars, empty tensors and metadata survive a write and a read,
// both mapped and read into memory.
TEST_P(SafetensorsRoundTrip, EveryDtype) {
  const bool useMmap = GetParam();
  Random random;
  SCOPED_TRACE(random.trace());
  TempDir dir;
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {7}, {3, 5}, {2, 1, 3}};
  std::map<std::string, HostTensor> tensors;
  for (int d = 1; d < TFC_DTYPE_COUNT; ++d) {
    auto dtype = static_cast<tfc_dtype_t>(d);
    for (size_t s = 0; s < shapes.size(); ++s) {
      std::string name = std::string("layer.") + tfc_dtype_name(dtype) + ".t" + std::to_string(s);
      tensors.emplace(name, randomTensor(random, dtype, shapes[s]));
    }
  }
  std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"note", "quote \" backslash \\ newline \n caf\xc3\xa9"}};
  const std::string path = dir.file("model.safetensors");
  ASSERT_OK(writeSafetensors(path, tensors, metadata));
  EXPECT_EQ(dir.list(), std::vector<std::string>{"model.safetensors"});  // no temp file left

  SafetensorsOpenOptions options;
  options.allowMmap = useMmap;
  StatusOr<SafetensorsFile> file = SafetensorsFile::open(path, options);
  ASSERT_OK(file);
  EXPECT_EQ(file->isMapped(), useMmap);
  EXPECT_EQ(file->path(), path);
  EXPECT_EQ(file->metadata(), metadata);
  ASSERT_EQ(file->tensors().size(), tensors.size());
  for (const auto& [name, expected] : tensors) {
    const SafetensorsTensorInfo* info = file->find(name);
    ASSERT_NE(info, nullptr) << name;
    expectSameTensor(info->view(), expected, name);
    // The writer aligns every tensor to its element size.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(info->data) % tfc_dtype_size(info->dtype), 0u) << name;
    EXPECT_EQ(info->byteSize, info->dataEnd - info->dataBegin);
    StatusOr<HostTensor> loaded = file->load(name);
    ASSERT_OK(loaded);
    expectSameTensor(loaded->view(), expected, name);
  }
  // tensors() is sorted by name.
  for (size_t i = 1; i < file->tensors().size(); ++i) {
    EXPECT_LT(file->tensors()[i - 1].name, file->tensors()[i].name);
  }
}

INSTANTIATE_TEST_SUITE_P(MmapAndRead, SafetensorsRoundTrip, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("Mmap") : std::string("Read");
                         });

// Tests that a rank-0 tensor round-trips with shape [] and one element.
TEST(Safetensors, ScalarTensor) {
  TempDir dir;
  const double value = 3.25;
  std::vector<NamedTensorView> tensors = {{"loss", {TFC_DTYPE_F64, {}, &value, sizeof(value)}}};
  const std::string path = dir.file("scalar.safetensors");
  ASSERT_OK(writeSafetensors(path, tensors));
  StatusOr<SafetensorsFile> file = SafetensorsFile::open(path);
  ASSERT_OK(file);
  StatusOr<HostTensor> loss = file->load("loss");
  ASSERT_OK(loss);
  EXPECT_TRUE(loss->shape().empty());
  EXPECT_EQ(loss->numElements(), 1);
  EXPECT_EQ(*loss->dataAs<double>(), 3.25);
  EXPECT_TRUE(file->metadata().empty());
}

// Tests the exact bytes the writer produces: sorted keys, Hugging Face's key order inside a
// tensor, space padding to a multiple of 64, data laid out by decreasing element size.
TEST(Safetensors, HeaderLayout) {
  TempDir dir;
  const uint8_t small[3] = {1, 2, 3};
  const float big[2] = {1.0f, 2.0f};
  std::vector<NamedTensorView> tensors = {
      {"b", {TFC_DTYPE_F32, {2}, big, sizeof(big)}},
      {"a", {TFC_DTYPE_U8, {3}, small, sizeof(small)}},
  };
  const std::string path = dir.file("layout.safetensors");
  ASSERT_OK(writeSafetensors(path, tensors, {{"format", "pt"}}));
  std::string bytes = testing::readBytes(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i) headerSize = (headerSize << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ((8 + headerSize) % kSafetensorsWriteAlignment, 0u);
  const std::string expectedJson =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"U8","shape":[3],"data_offsets":[8,11]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string header = bytes.substr(8, headerSize);
  EXPECT_EQ(header.substr(0, expectedJson.size()), expectedJson);
  EXPECT_EQ(header.find_first_not_of(' ', expectedJson.size()), std::string::npos);
  EXPECT_EQ(bytes.size(), 8 + headerSize + 11);
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + headerSize, big, 8), 0);
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + headerSize + 8, small, 3), 0);
}

// Tests that the tensors whose size is a multiple of kSafetensorsWriteAlignment come first
// and start at multiples of it (so that the runtime can map them), the others after them
// aligned to their element size, with no gaps.
TEST(Safetensors, WholeLineTensorsStartAligned) {
  TempDir dir;
  std::vector<uint8_t> bytes(4096, 1);
  std::vector<NamedTensorView> tensors = {
      {"a.odd", {TFC_DTYPE_F32, {3}, bytes.data(), 12}},
      {"b.line", {TFC_DTYPE_F32, {16}, bytes.data(), 64}},
      {"c.byte", {TFC_DTYPE_U8, {5}, bytes.data(), 5}},
      {"d.lines", {TFC_DTYPE_F16, {3, 64}, bytes.data(), 384}},
      {"e.odd64", {TFC_DTYPE_I64, {3}, bytes.data(), 24}},
  };
  const std::string path = dir.file("aligned.safetensors");
  ASSERT_OK(writeSafetensors(path, tensors, {{"format", "pt"}}));
  StatusOr<SafetensorsFile> file = SafetensorsFile::open(path);
  ASSERT_OK(file);
  auto begin = [&](const char* name) { return file->find(name)->fileOffset; };
  EXPECT_EQ(begin("b.line") % kSafetensorsWriteAlignment, 0u);
  EXPECT_EQ(begin("d.lines") % kSafetensorsWriteAlignment, 0u);
  EXPECT_EQ(begin("d.lines"), begin("b.line") + 64);  // F32 before F16, no gap
  EXPECT_EQ(begin("e.odd64"), begin("d.lines") + 384);
  EXPECT_EQ(begin("a.odd"), begin("e.odd64") + 24);
  EXPECT_EQ(begin("c.byte"), begin("a.odd") + 12);
}

// Tests reading a file in the form Hugging Face's library writes, built by hand.
TEST(Safetensors, ReadsHandWrittenFile) {
  TempDir dir;
  const std::string path = dir.file("hf.safetensors");
  std::string header =
      R"({"__metadata__":{"format":"pt"},"h.0.attn.c_attn.weight":{"dtype":"F32","shape":[2,2],)"
      R"("data_offsets":[0,16]},"empty":{"dtype":"I64","shape":[0,3],"data_offsets":[16,16]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  testing::writeBytes(path, testing::safetensorsBytes(header, 16));
  StatusOr<SafetensorsFile> file = SafetensorsFile::open(path);
  ASSERT_OK(file);
  ASSERT_EQ(file->tensors().size(), 2u);
  StatusOr<TensorView> weight = file->get("h.0.attn.c_attn.weight");
  ASSERT_OK(weight);
  EXPECT_EQ(weight->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(static_cast<const uint8_t*>(weight->data)[1], 8);  // the helper's byte pattern
  EXPECT_EQ(file->find("h.0.attn.c_attn.weight")->fileOffset, 8 + header.size());
  EXPECT_EQ(file->find("empty")->byteSize, 0u);
}

TEST(Safetensors, ParseFromMemory) {
  std::string bytes = testing::safetensorsBytes(
      R"({"x":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}})", 4);
  StatusOr<SafetensorsFile> file = parseSafetensors(bytes.data(), bytes.size(), "<memory>");
  ASSERT_OK(file);
  EXPECT_FALSE(file->isMapped());
  EXPECT_EQ(file->find("x")->data, reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size() - 4);
  EXPECT_EQ(file->find("y"), nullptr);
}

// ---------------------------------------------------------------------------------------
// Bad input: each case writes a file, opens it, and checks the code and that the message
// names the file and the reason.

struct BadFileCase {
  const char* testName;
  std::string bytes;
  tfc_status_code_t code;
  const char* keyword;
};

std::string withHeader(const std::string& json, size_t dataSize) {
  return testing::safetensorsBytes(json, dataSize);
}

std::string tensorJson(const std::string& name, const std::string& dtype,
                       const std::string& shape, const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

std::vector<BadFileCase> badFileCases() {
  std::string hugeLength(8, '\0');
  hugeLength[5] = 1;  // 2^40
  std::string justOverLimit = withHeader("{}", 0);
  uint64_t over = kSafetensorsMaxHeaderBytes + 1;
  for (int i = 0; i < 8; ++i) justOverLimit[i] = static_cast<char>((over >> (8 * i)) & 0xFF);
  const std::string good = tensorJson("a", "F32", "[2]", "[0,8]");
  return {
      {"Empty", "", TFC_DATA_LOSS, "too short"},
      {"TruncatedHeaderLength", std::string("\x10\x00\x00", 3), TFC_DATA_LOSS, "too short"},
      {"HeaderLongerThanFile", withHeader("{}", 0).substr(0, 9), TFC_DATA_LOSS, "header length 2 exceeds"},
      {"HugeHeaderLength", hugeLength + "{}", TFC_DATA_LOSS, "exceeds the limit"},
      {"HeaderJustOverLimit", justOverLimit, TFC_DATA_LOSS, "exceeds the limit"},
      {"InvalidJson", withHeader(R"({"a":{"dtype":"F32",)", 0), TFC_DATA_LOSS, "invalid JSON"},
      {"InvalidJsonBareWord", withHeader(R"({"a":nope})", 0), TFC_DATA_LOSS, "must be an object"},
      {"NotAnObject", withHeader("[1, 2]", 0), TFC_DATA_LOSS, "not a JSON object"},
      {"EmptyHeader", withHeader("", 0), TFC_DATA_LOSS, "not a JSON object"},
      {"TrailingGarbage", withHeader("{" + good + "}xyz", 8), TFC_DATA_LOSS, "trailing data"},
      {"TrailingSecondObject", withHeader("{}{}", 0), TFC_DATA_LOSS, "trailing data"},
      {"TrailingNul", withHeader(std::string("{}\0", 3), 0), TFC_DATA_LOSS, "trailing data"},
      {"UnknownDtype", withHeader("{" + tensorJson("a", "F8_E4M3", "[2]", "[0,2]") + "}", 2),
       TFC_UNIMPLEMENTED, "unsupported dtype 'F8_E4M3'"},
      {"NonStringDtype", withHeader(R"({"a":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", 4),
       TFC_DATA_LOSS, "non-string dtype"},
      {"NegativeDimension", withHeader("{" + tensorJson("a", "F32", "[2,-3]", "[0,8]") + "}", 8),
       TFC_DATA_LOSS, "negative dimension -3"},
      {"FractionalDimension", withHeader("{" + tensorJson("a", "F32", "[2.5]", "[0,8]") + "}", 8),
       TFC_DATA_LOSS, "expected an integer"},
      {"DimensionOutOfRange",
       withHeader("{" + tensorJson("a", "F32", "[99999999999999999999]", "[0,8]") + "}", 8),
       TFC_DATA_LOSS, "out of range"},
      {"ShapeNotArray", withHeader("{" + tensorJson("a", "F32", "7", "[0,8]") + "}", 8),
       TFC_DATA_LOSS, "not an array"},
      {"SizeMismatch", withHeader("{" + tensorJson("a", "F32", "[2,3]", "[0,8]") + "}", 8),
       TFC_DATA_LOSS, "has data_offsets [0, 8] but dtype F32 and shape [2, 3] need 24 bytes"},
      {"SizeOverflow",
       withHeader("{" + tensorJson("a", "F32", "[4611686018427387904,4]", "[0,8]") + "}", 8),
       TFC_DATA_LOSS, "overflows"},
      {"OffsetsOutOfRange", withHeader("{" + tensorJson("a", "F32", "[2]", "[0,8]") + "}", 4),
       TFC_DATA_LOSS, "out of range"},
      {"OffsetsHuge",
       withHeader("{" + tensorJson("a", "U8", "[1]", "[18446744073709551615,18446744073709551615]") + "}", 4),
       TFC_DATA_LOSS, "out of range"},
      {"OffsetsReversed", withHeader("{" + tensorJson("a", "F32", "[0]", "[8,4]") + "}", 8),
       TFC_DATA_LOSS, "begin is after its end"},
      {"OffsetsNegative", withHeader("{" + tensorJson("a", "F32", "[2]", "[-8,0]") + "}", 8),
       TFC_DATA_LOSS, "non-negative"},
      {"OffsetsThree", withHeader("{" + tensorJson("a", "F32", "[2]", "[0,8,8]") + "}", 8),
       TFC_DATA_LOSS, "more than two data_offsets"},
      {"OffsetsOne", withHeader("{" + tensorJson("a", "F32", "[2]", "[0]") + "}", 8),
       TFC_DATA_LOSS, "fewer than two data_offsets"},
      // The reference implementation refuses bytes after the last tensor's data.
      {"TrailingBytesAfterData", withHeader("{" + good + "}", 12), TFC_DATA_LOSS,
       "the tensors use 8; the file has 4 trailing bytes"},
      {"DataButNoTensors", withHeader("{}", 1), TFC_DATA_LOSS, "1 trailing bytes"},
      {"Overlap",
       withHeader("{" + tensorJson("a", "F32", "[2]", "[0,8]") + "," +
                      tensorJson("b", "F32", "[2]", "[4,12]") + "}", 12),
       TFC_DATA_LOSS, "overlap"},
      {"OverlapContained",
       withHeader("{" + tensorJson("a", "U8", "[16]", "[0,16]") + "," +
                      tensorJson("b", "U8", "[2]", "[14,16]") + "," +
                      tensorJson("c", "U8", "[2]", "[4,6]") + "}", 16),
       TFC_DATA_LOSS, "overlap"},
      {"DuplicateName", withHeader("{" + good + "," + tensorJson("a", "F32", "[2]", "[8,16]") + "}", 16),
       TFC_DATA_LOSS, "duplicate tensor name 'a'"},
      {"DuplicateField", withHeader(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4),
       TFC_DATA_LOSS, "duplicate key 'dtype'"},
      {"UnknownField", withHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4),
       TFC_DATA_LOSS, "unknown key 'x'"},
      {"MissingShape", withHeader(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4),
       TFC_DATA_LOSS, "missing 'shape'"},
      {"EmptyTensorName", withHeader("{" + tensorJson("", "F32", "[1]", "[0,4]") + "}", 4),
       TFC_DATA_LOSS, "empty name"},
      {"MetadataNotString", withHeader(R"({"__metadata__":{"epoch":3}})", 0), TFC_DATA_LOSS,
       "must be a string"},
      {"MetadataNotObject", withHeader(R"({"__metadata__":"pt"})", 0), TFC_DATA_LOSS,
       "'__metadata__' must be an object"},
      {"MetadataTwice", withHeader(R"({"__metadata__":{},"__metadata__":{}})", 0), TFC_DATA_LOSS,
       "appears twice"},
      {"MetadataDuplicateKey", withHeader(R"({"__metadata__":{"k":"a","k":"b"}})", 0),
       TFC_DATA_LOSS, "duplicate '__metadata__' key 'k'"},
      {"InvalidUtf8Name", withHeader("{" + tensorJson("\xff", "F32", "[1]", "[0,4]") + "}", 4),
       TFC_DATA_LOSS, "UTF-8"},
  };
}

class SafetensorsBadFile : public ::testing::TestWithParam<BadFileCase> {};

TEST_P(SafetensorsBadFile, IsRefusedWithMessage) {
  const BadFileCase& c = GetParam();
  TempDir dir;
  const std::string path = dir.file(std::string(c.testName) + ".safetensors");
  testing::writeBytes(path, c.bytes);
  StatusOr<SafetensorsFile> file = SafetensorsFile::open(path);
  EXPECT_TRUE(isError(file.status(), c.code, path, c.keyword));
  // The in-memory entry point says the same.
  StatusOr<SafetensorsFile> parsed = parseSafetensors(c.bytes.data(), c.bytes.size(), path);
  EXPECT_TRUE(isError(parsed.status(), c.code, path, c.keyword));
}

INSTANTIATE_TEST_SUITE_P(Cases, SafetensorsBadFile, ::testing::ValuesIn(badFileCases()),
                         [](const ::testing::TestParamInfo<BadFileCase>& p) {
                           return std::string(p.param.testName);
                         });

TEST(Safetensors, TooManyDimensions) {
  std::string shape = "[";
  for (size_t i = 0; i <= kMaxRank; ++i) shape += i == 0 ? "1" : ",1";
  shape += "]";
  std::string bytes = withHeader("{" + tensorJson("a", "F32", shape, "[0,4]") + "}", 4);
  StatusOr<SafetensorsFile> file = parseSafetensors(bytes.data(), bytes.size(), "rank.safetensors");
  EXPECT_TRUE(isError(file.status(), TFC_DATA_LOSS, "rank.safetensors", "more than 64 dimensions"));
}

TEST(Safetensors, HostileNameIsEscapedInMessages) {
  std::string name = "evil\\u001b[31m\\n" + std::string(500, 'x');
  std::string bytes = withHeader("{" + tensorJson(name, "F32", "[2,3]", "[0,8]") + "}", 8);
  StatusOr<SafetensorsFile> file = parseSafetensors(bytes.data(), bytes.size(), "evil.safetensors");
  ASSERT_FALSE(file.ok());
  std::string message = file.status().message();
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("\\x1b[31m\\x0a"), std::string::npos) << message;
  EXPECT_NE(message.find("(510 bytes)"), std::string::npos) << message;
  EXPECT_LT(message.size(), 400u) << message;
}

TEST(Safetensors, MissingFile) {
  TempDir dir;
  const std::string path = dir.file("absent.safetensors");
  EXPECT_TRUE(isError(SafetensorsFile::open(path).status(), TFC_NOT_FOUND, path,
                      "No such file or directory"));
}

TEST(Safetensors, DirectoryIsNotAFile) {
  TempDir dir;
  EXPECT_TRUE(isError(SafetensorsFile::open(dir.path()).status(), TFC_INVALID_ARGUMENT,
                      dir.path(), "is a directory"));
}

TEST(Safetensors, DeviceIsNotARegularFile) {
  EXPECT_TRUE(isError(SafetensorsFile::open("/dev/zero").status(), TFC_INVALID_ARGUMENT,
                      "/dev/zero", "not a regular file"));
}

TEST(Safetensors, GetUnknownTensor) {
  std::string bytes = withHeader("{" + tensorJson("a", "F32", "[2]", "[0,8]") + "}", 8);
  StatusOr<SafetensorsFile> file = parseSafetensors(bytes.data(), bytes.size(), "m.safetensors");
  ASSERT_OK(file);
  EXPECT_TRUE(isError(file->get("wte.weight").status(), TFC_NOT_FOUND, "m.safetensors",
                      "no tensor named 'wte.weight'"));
  EXPECT_TRUE(isError(file->load("b").status(), TFC_NOT_FOUND, "m.safetensors", "'b'"));
}

TEST(Safetensors, GapsAreAcceptedButNotAnUnusedTail) {
  // Stricter readers require tensors to tile the data section; this one requires them to be
  // in range and disjoint, and (as the reference implementation does) the data section to
  // end at the last tensor's end: trailing bytes are refused, naming both sizes.
  std::string bytes = withHeader("{" + tensorJson("a", "U8", "[2]", "[4,6]") + "," +
                                     tensorJson("b", "U8", "[2]", "[10,12]") + "}", 12);
  StatusOr<SafetensorsFile> file = parseSafetensors(bytes.data(), bytes.size(), "gaps");
  ASSERT_OK(file);
  bytes = withHeader("{" + tensorJson("a", "U8", "[2]", "[4,6]") + "," +
                         tensorJson("b", "U8", "[2]", "[10,12]") + "}", 20);
  EXPECT_TRUE(isError(parseSafetensors(bytes.data(), bytes.size(), "tail").status(),
                      TFC_DATA_LOSS, "tail",
                      "20 bytes of data after the header but the tensors use 12"));
  // Empty tensors may share offsets with anything.
  bytes = withHeader("{" + tensorJson("a", "U8", "[4]", "[0,4]") + "," +
                         tensorJson("b", "U8", "[0]", "[2,2]") + "," +
                         tensorJson("c", "U8", "[0]", "[2,2]") + "}", 4);
  file = parseSafetensors(bytes.data(), bytes.size(), "empties");
  ASSERT_OK(file);
}

// ---------------------------------------------------------------------------------------
// Writing.

TEST(SafetensorsWrite, NonexistentDirectoryLeavesNoTempFile) {
  TempDir dir;
  const std::string path = dir.file("missing/model.safetensors");
  const float value = 1.0f;
  Status status = writeSafetensors(path, {{"x", {TFC_DTYPE_F32, {}, &value, 4}}});
  EXPECT_TRUE(isError(status, TFC_NOT_FOUND, path, "cannot create temporary file"));
  EXPECT_TRUE(dir.list().empty());
}

TEST(SafetensorsWrite, ExistingFileSurvivesFailedWrite) {
  Random random;
  SCOPED_TRACE(random.trace());
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  testing::writeBytes(path, "previous contents");
  HostTensor big = randomTensor(random, TFC_DTYPE_F32, {1 << 18});  // 1 MiB
  Status status;
  {
    // A real write error (EFBIG) half-way through the data.
    testing::FileSizeLimit limit(64 * 1024);
    status = writeSafetensors(path, {{"big", big.view()}});
  }
  EXPECT_TRUE(isError(status, TFC_IO_ERROR, path, "write to temporary file"));
  EXPECT_EQ(testing::readBytes(path), "previous contents");
  EXPECT_EQ(dir.list(), std::vector<std::string>{"model.safetensors"});
}

TEST(SafetensorsWrite, DirectoryInTheWayIsRefusedAndKept) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  testing::writeBytes(path + "/inside", "keep");
  const float value = 1.0f;
  Status status = writeSafetensors(path, {{"x", {TFC_DTYPE_F32, {}, &value, 4}}});
  EXPECT_TRUE(isError(status, TFC_INVALID_ARGUMENT, path, "is a directory"));
  EXPECT_EQ(dir.list(), std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(testing::readBytes(path + "/inside"), "keep");
}

TEST(SafetensorsWrite, ReplacesExistingFile) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  testing::writeBytes(path, "previous contents");
  const int64_t value = -7;
  ASSERT_OK(writeSafetensors(path, {{"step", {TFC_DTYPE_I64, {}, &value, 8}}}));
  StatusOr<SafetensorsFile> file = SafetensorsFile::open(path);
  ASSERT_OK(file);
  EXPECT_EQ(*static_cast<const int64_t*>(file->get("step")->data), -7);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"model.safetensors"});
}

TEST(SafetensorsWrite, RefusesInvalidArguments) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  const float values[2] = {1.0f, 2.0f};
  const TensorView good{TFC_DTYPE_F32, {2}, values, 8};
  struct Case {
    std::vector<NamedTensorView> tensors;
    std::map<std::string, std::string> metadata;
    const char* keyword;
  } cases[] = {
      {{{"a", good}, {"a", good}}, {}, "duplicate tensor name 'a'"},
      {{{"", good}}, {}, "empty name"},
      {{{"__metadata__", good}}, {}, "reserved"},
      {{{"\xff", good}}, {}, "UTF-8"},
      {{{"a", {TFC_DTYPE_F32, {3}, values, 8}}}, {}, "does not match dtype F32 and shape [3]"},
      {{{"a", {TFC_DTYPE_F32, {-2}, values, 8}}}, {}, "does not match"},
      {{{"a", {TFC_DTYPE_INVALID, {2}, values, 8}}}, {}, "invalid dtype"},
      {{{"a", {TFC_DTYPE_F32, {2}, nullptr, 8}}}, {}, "null data pointer"},
      {{{"a", {TFC_DTYPE_F32, std::vector<int64_t>(kMaxRank + 1, 1), values, 4}}}, {}, "rank"},
      {{{"a", good}}, {{"k", "\xc3"}}, "not valid UTF-8"},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(isError(writeSafetensors(path, c.tensors, c.metadata), TFC_INVALID_ARGUMENT, path,
                        c.keyword));
  }
  EXPECT_TRUE(dir.list().empty());
}

}  // namespace
}  // namespace tfc
