// Tests the .npy reader and writer: round trips for every dtype, NumPy's header variants,
// and one bad input for every validation rule.
#include "tfc/runtime/npy.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace tfc {
namespace {

using testing::isError;
using testing::Random;
using testing::TempDir;

// The bytes of a .npy file with header |dict| (padded as NumPy does) and |dataSize| bytes.
std::string npyBytes(const std::string& dict, size_t dataSize, int major = 1) {
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  size_t prefix = major == 1 ? 10 : 12;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  size_t headerSize = total - prefix;
  for (size_t i = 0; i < prefix - 8; ++i) bytes += static_cast<char>((headerSize >> (8 * i)) & 0xFF);
  bytes += dict;
  bytes.append(total - bytes.size() - 1, ' ');
  bytes += '\n';
  for (size_t i = 0; i < dataSize; ++i) bytes += static_cast<char>(i + 1);
  return bytes;
}

TEST(Npy, RoundTripEveryDtype) {
  Random random;
  SCOPED_TRACE(random.trace());
  TempDir dir;
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {5}, {3, 4}, {2, 0, 3}, {2, 3, 1, 2}};
  for (int d = 1; d < TFC_DTYPE_COUNT; ++d) {
    auto dtype = static_cast<tfc_dtype_t>(d);
    if (dtype == TFC_DTYPE_BF16) continue;  // no .npy spelling; see RefusesBf16
    for (const auto& shape : shapes) {
      SCOPED_TRACE(std::string(tfc_dtype_name(dtype)) + " " + formatShape(shape));
      StatusOr<HostTensor> tensor = HostTensor::allocate(dtype, shape);
      ASSERT_OK(tensor);
      if (dtype == TFC_DTYPE_BOOL) {
        random.fillBool(tensor->mutableData(), tensor->byteSize());
      } else {
        random.fill(tensor->mutableData(), tensor->byteSize());
      }
      const std::string path = dir.file(std::string(tfc_dtype_name(dtype)) + ".npy");
      ASSERT_OK(writeNpy(path, tensor->view()));
      StatusOr<HostTensor> read = readNpy(path);
      ASSERT_OK(read);
      EXPECT_EQ(read->dtype(), dtype);
      EXPECT_EQ(read->shape(), shape);
      ASSERT_EQ(read->byteSize(), tensor->byteSize());
      EXPECT_EQ(std::memcmp(read->data(), tensor->data(), tensor->byteSize()), 0);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(read->data()) % kHostTensorAlignment, 0u);
    }
  }
  for (const std::string& name : dir.list()) EXPECT_EQ(name.find(".tmp."), std::string::npos);
}

// Tests a rank-0 tensor: NumPy spells its shape "()".
TEST(Npy, ScalarTensor) {
  TempDir dir;
  const float value = -1.5f;
  const std::string path = dir.file("scalar.npy");
  ASSERT_OK(writeNpy(path, {TFC_DTYPE_F32, {}, &value, 4}));
  EXPECT_NE(testing::readBytes(path).find("'shape': (), }"), std::string::npos);
  StatusOr<HostTensor> read = readNpy(path);
  ASSERT_OK(read);
  EXPECT_EQ(read->rank(), 0u);
  EXPECT_EQ(read->numElements(), 1);
  EXPECT_EQ(*read->dataAs<float>(), -1.5f);
}

// Tests the exact header NumPy would write for a (2, 3) float32 array.
TEST(Npy, HeaderMatchesNumpy) {
  TempDir dir;
  const float values[6] = {1, 2, 3, 4, 5, 6};
  const std::string path = dir.file("a.npy");
  ASSERT_OK(writeNpy(path, {TFC_DTYPE_F32, {2, 3}, values, sizeof(values)}));
  std::string bytes = testing::readBytes(path);
  EXPECT_EQ(bytes, npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0) +
                       std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.size() - sizeof(values), 128u);  // as NumPy: data starts 64-byte aligned
  EXPECT_EQ(bytes[bytes.size() - sizeof(values) - 1], '\n');
  // One dimension is "(n,)".
  ASSERT_OK(writeNpy(path, {TFC_DTYPE_F32, {6}, values, sizeof(values)}));
  EXPECT_NE(testing::readBytes(path).find("'shape': (6,), }"), std::string::npos);
}

TEST(Npy, AcceptsHeaderVariants) {
  const struct {
    const char* dict;
    int major;
    std::vector<int64_t> shape;
  } kCases[] = {
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 1, {2, 3}},
      {"{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (6,)}", 1, {6}},
      {"{'shape': (3, 2), 'fortran_order': False, 'descr': '<i4'}", 1, {3, 2}},  // any order
      {"{'descr':'<i4','fortran_order':False,'shape':(2L, 3L)}", 1, {2, 3}},     // Python 2
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1, 6,), }", 2, {1, 6}},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (6, 1), }", 3, {6, 1}},
  };
  for (const auto& c : kCases) {
    const std::string dict = c.dict;
    std::string bytes = npyBytes(dict, 24, c.major);
    StatusOr<HostTensor> tensor = parseNpy(bytes.data(), bytes.size(), "variant.npy");
    ASSERT_OK(tensor) << dict << ": " << tensor.status().toString();
    EXPECT_EQ(tensor->dtype(), TFC_DTYPE_I32);
    EXPECT_EQ(tensor->shape(), c.shape);
    EXPECT_EQ(tensor->dataAs<uint8_t>()[0], 1);
  }
}

TEST(Npy, RefusesBf16) {
  TempDir dir;
  const uint16_t value = 0x3f80;
  const std::string path = dir.file("bf16.npy");
  EXPECT_TRUE(isError(writeNpy(path, {TFC_DTYPE_BF16, {}, &value, 2}), TFC_INVALID_ARGUMENT, path,
                      "NumPy has no bfloat16"));
  EXPECT_TRUE(dir.list().empty());
}

TEST(Npy, WriteRefusesInvalidArguments) {
  TempDir dir;
  const std::string path = dir.file("bad.npy");
  const float values[2] = {1, 2};
  EXPECT_TRUE(isError(writeNpy(path, {TFC_DTYPE_F32, {3}, values, 8}), TFC_INVALID_ARGUMENT, path,
                      "does not match"));
  EXPECT_TRUE(isError(writeNpy(path, {TFC_DTYPE_INVALID, {2}, values, 8}), TFC_INVALID_ARGUMENT,
                      path, "invalid dtype"));
  EXPECT_TRUE(isError(writeNpy(path, {TFC_DTYPE_F32, {2}, nullptr, 8}), TFC_INVALID_ARGUMENT, path,
                      "null data"));
  EXPECT_TRUE(dir.list().empty());
}

// ---------------------------------------------------------------------------------------
// Bad input.

struct BadNpyCase {
  const char* testName;
  std::string bytes;
  tfc_status_code_t code;
  const char* keyword;
};

const char kGood[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

std::vector<BadNpyCase> badNpyCases() {
  std::string hugeHeader = npyBytes(kGood, 24, 2);
  hugeHeader[10] = 0x7f;  // header length ~ 2 GB
  hugeHeader[11] = 0x7f;
  std::string headerPastEnd = npyBytes(kGood, 0).substr(0, 40);
  return {
      {"Empty", "", TFC_DATA_LOSS, "bad magic"},
      {"BadMagic", std::string("\x93NUMPZ\x01\x00", 8) + npyBytes(kGood, 24).substr(8), TFC_DATA_LOSS, "bad magic"},
      {"Safetensors", std::string("\x10\0\0\0\0\0\0\0{}", 10), TFC_DATA_LOSS, "not a .npy file"},
      {"TruncatedVersion", "\x93NUMPY\x01", TFC_DATA_LOSS, "truncated before the format version"},
      {"TruncatedLength", std::string("\x93NUMPY\x02\x00\x10\x00", 10), TFC_DATA_LOSS, "truncated before the header length"},
      {"UnsupportedVersion", "\x93NUMPY\x04" + npyBytes(kGood, 24).substr(7), TFC_UNIMPLEMENTED,
       "version 4.0"},
      {"UnsupportedMinorVersion", "\x93NUMPY\x01\x01" + npyBytes(kGood, 24).substr(8),
       TFC_UNIMPLEMENTED, "version 1.1"},
      {"HeaderPastEnd", headerPastEnd, TFC_DATA_LOSS, "truncated file"},
      {"HugeHeaderLength", hugeHeader, TFC_DATA_LOSS, "exceeds the limit"},
      {"TruncatedData", npyBytes(kGood, 20), TFC_DATA_LOSS,
       "truncated data: dtype F32 and shape [2, 3] need 24 bytes of data but the file has 20"},
      {"TrailingData", npyBytes(kGood, 25), TFC_DATA_LOSS, "trailing bytes"},
      {"FortranOrder", npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24),
       TFC_UNIMPLEMENTED, "fortran_order is True"},
      {"UnknownDescr", npyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 24),
       TFC_UNIMPLEMENTED, "unsupported dtype descr '<c8'"},
      {"BigEndian", npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", 24),
       TFC_UNIMPLEMENTED, "big-endian"},
      {"StructuredDescr",
       npyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", 24),
       TFC_UNIMPLEMENTED, "structured"},
      {"MissingKey", npyBytes("{'descr': '<f4', 'shape': (6,), }", 24), TFC_DATA_LOSS,
       "missing key 'fortran_order'"},
      {"ExtraKey", npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", 24),
       TFC_DATA_LOSS, "unexpected key 'x'"},
      {"DuplicateKey",
       npyBytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", 24),
       TFC_DATA_LOSS, "duplicate key 'descr'"},
      {"ShapeNotTuple", npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", 24),
       TFC_DATA_LOSS, "not a tuple"},
      {"ShapeList", npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': [6], }", 24),
       TFC_DATA_LOSS, "must be a tuple"},
      {"NegativeDimension",
       npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }", 24), TFC_DATA_LOSS,
       "negative dimension"},
      {"DimensionOutOfRange",
       npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 24),
       TFC_DATA_LOSS, "out of range"},
      {"SizeOverflow",
       npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }", 24),
       TFC_DATA_LOSS, "overflows"},
      {"FortranOrderNotBool",
       npyBytes("{'descr': '<f4', 'fortran_order': 0, 'shape': (6,), }", 24), TFC_DATA_LOSS,
       "True or False"},
      {"GarbageAfterDict", npyBytes(std::string(kGood) + " x", 24), TFC_DATA_LOSS, "trailing data"},
      {"NotADict", npyBytes("['descr', '<f4']", 24), TFC_DATA_LOSS, "Python dict"},
      {"UnterminatedString", npyBytes("{'descr: '<f4'", 24), TFC_DATA_LOSS, "expected ':'"},
      {"EscapeInString", npyBytes("{'de\\x73cr': '<f4'}", 24), TFC_DATA_LOSS, "escape"},
      {"NulInHeader", npyBytes(std::string("{'descr': '<f4',\0 'fortran_order': False}", 41), 24),
       TFC_DATA_LOSS, "header byte 16"},
  };
}

class NpyBadFile : public ::testing::TestWithParam<BadNpyCase> {};

TEST_P(NpyBadFile, IsRefusedWithMessage) {
  const BadNpyCase& c = GetParam();
  TempDir dir;
  const std::string path = dir.file(std::string(c.testName) + ".npy");
  testing::writeBytes(path, c.bytes);
  EXPECT_TRUE(isError(readNpy(path).status(), c.code, path, c.keyword));
  EXPECT_TRUE(isError(parseNpy(c.bytes.data(), c.bytes.size(), path).status(), c.code, path,
                      c.keyword));
}

INSTANTIATE_TEST_SUITE_P(Cases, NpyBadFile, ::testing::ValuesIn(badNpyCases()),
                         [](const ::testing::TestParamInfo<BadNpyCase>& p) {
                           return std::string(p.param.testName);
                         });

TEST(Npy, TooManyDimensions) {
  std::string shape = "(";
  for (size_t i = 0; i <= kMaxRank; ++i) shape += "1, ";
  shape += ")";
  std::string bytes =
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + "}", 4);
  EXPECT_TRUE(isError(parseNpy(bytes.data(), bytes.size(), "rank.npy").status(), TFC_DATA_LOSS,
                      "rank.npy", "more than 64 dimensions"));
}

TEST(Npy, MissingFile) {
  TempDir dir;
  const std::string path = dir.file("absent.npy");
  EXPECT_TRUE(isError(readNpy(path).status(), TFC_NOT_FOUND, path, "No such file or directory"));
}

TEST(NpyWrite, NonexistentDirectoryLeavesNoTempFile) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/out.npy");
  const int32_t value = 5;
  EXPECT_TRUE(isError(writeNpy(path, {TFC_DTYPE_I32, {}, &value, 4}), TFC_NOT_FOUND, path,
                      "cannot create temporary file"));
  EXPECT_TRUE(dir.list().empty());
}

TEST(NpyWrite, ExistingFileSurvivesFailedWrite) {
  Random random;
  SCOPED_TRACE(random.trace());
  TempDir dir;
  const std::string path = dir.file("out.npy");
  testing::writeBytes(path, "previous contents");
  StatusOr<HostTensor> big = HostTensor::allocate(TFC_DTYPE_U8, {1 << 20});
  ASSERT_OK(big);
  random.fill(big->mutableData(), big->byteSize());
  Status status;
  {
    testing::FileSizeLimit limit(4096);
    status = writeNpy(path, big->view());
  }
  EXPECT_TRUE(isError(status, TFC_IO_ERROR, path, "File too large"));
  EXPECT_EQ(testing::readBytes(path), "previous contents");
  EXPECT_EQ(dir.list(), std::vector<std::string>{"out.npy"});
}

}  // namespace
}  // namespace tfc
