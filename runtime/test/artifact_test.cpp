// Tests of tfc_artifact_open: the fake model loads and answers queries; broken, foreign and
// garbage files are refused with a message that names the file and the reason.
#include <unistd.h>

#include <cstring>
#include <string>

#include "fake_artifacts.hpp"
#include "test_util.hpp"
#include "tfc/artifact_checksum.h"
#include "tfc/runtime/runtime.hpp"

namespace tfc {
namespace {

using testing::fakeArtifact;
using testing::isError;
using testing::TempDir;

Status openStatus(const std::string& path, const tfc_artifact_options_t* options = nullptr) {
  auto artifact = Artifact::open(path, options);
  if (artifact.ok()) return Status();
  return std::move(artifact).takeStatus();
}

TEST(ArtifactTest, OpensTheFakeModelAndAnswersQueries) {
  auto artifact = Artifact::open(fakeArtifact("fake_model"));
  ASSERT_OK(artifact);
  EXPECT_EQ(artifact->path(), fakeArtifact("fake_model"));
  EXPECT_EQ(artifact->target(), "x86_64-unknown-linux-gnu:fake");
  EXPECT_EQ(artifact->compilerVersion(), "tfc 0.1.0 (fake artifact)");
  EXPECT_EQ(artifact->moduleHash(), "0123456789abcdef");
  EXPECT_NE(artifact->metadataJson().find("\"model\": \"fake\""), std::string_view::npos);
  ASSERT_EQ(artifact->paramCount(), 4);
  EXPECT_STREQ(artifact->param(2).name, "proj.weight");
  EXPECT_EQ(artifact->param(2).flags & TFC_TENSOR_FROZEN, TFC_TENSOR_FROZEN);
  EXPECT_EQ(tfc_tensor_desc_byte_size(&artifact->param(3)), 8u * 4u * 4u);
  ASSERT_EQ(artifact->stateCount(), 2);
  EXPECT_EQ(artifact->state(1).rank, 0);
  EXPECT_EQ(tfc_tensor_desc_byte_size(&artifact->state(1)), 8u);
  ASSERT_EQ(artifact->entryCount(), 7);
  auto decode = artifact->findEntry("decode");
  ASSERT_OK(decode);
  EXPECT_STREQ(artifact->entry(*decode).name, "decode");
  EXPECT_EQ(artifact->entry(*decode).num_inputs, 2);
  EXPECT_EQ(tfc_artifact_param(artifact->get(), 4), nullptr);
  EXPECT_EQ(tfc_artifact_entry(artifact->get(), -1), nullptr);
  auto param = artifact->findParam("embed");
  ASSERT_OK(param);
  EXPECT_EQ(*param, 3);
}

TEST(ArtifactTest, UnknownEntryListsEntriesAndSuggests) {
  auto artifact = Artifact::open(fakeArtifact("fake_model"));
  ASSERT_OK(artifact);
  auto index = artifact->findEntry("forwrd");
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), TFC_NOT_FOUND);
  EXPECT_EQ(std::string(index.status().message()),
            "no entry 'forwrd' in " + fakeArtifact("fake_model") +
                " (entries: forward, decode, update, double, fail, fail_silent, big_arena); did "
                "you mean 'forward'?");
  auto far = artifact->findEntry("zzzzzzzzzz");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(std::string(far.status().message()).find("did you mean"), std::string::npos);
  auto param = artifact->findParam("proj.weigth");
  ASSERT_FALSE(param.ok());
  EXPECT_TRUE(isError(param.status(), TFC_NOT_FOUND, "fake_model.so", "did you mean 'proj.weight'"));
}

TEST(ArtifactTest, MissingFile) {
  TempDir dir;
  EXPECT_TRUE(isError(openStatus(dir.file("model.so")), TFC_NOT_FOUND, "model.so", "no such file"));
}

TEST(ArtifactTest, Directory) {
  TempDir dir;
  EXPECT_TRUE(isError(openStatus(dir.path()), TFC_INVALID_ARGUMENT, dir.path(),
                      "not a regular file (it is a directory)"));
}

TEST(ArtifactTest, GarbageFileHasBadElfMagic) {
  TempDir dir;
  testing::writeBytes(dir.file("model.so"), "this is not a shared object at all\n");
  Status status = openStatus(dir.file("model.so"));
  EXPECT_EQ(status.code(), TFC_DATA_LOSS);
  EXPECT_EQ(std::string(status.message()),
            dir.file("model.so") + ": not a shared object (bad ELF magic)");
}

TEST(ArtifactTest, EmptyFileHasBadElfMagic) {
  TempDir dir;
  testing::writeBytes(dir.file("model.so"), "");
  EXPECT_TRUE(isError(openStatus(dir.file("model.so")), TFC_DATA_LOSS, "model.so",
                      "not a shared object (bad ELF magic"));
}

TEST(ArtifactTest, TruncatedSharedObjectsAreRefusedWithoutACrash) {
  // glibc's dlopen raises SIGBUS on a file whose segments end past its end, so the runtime
  // checks the ELF headers first. Cut the file at many places, including inside the headers.
  TempDir dir;
  std::string bytes = testing::readBytes(fakeArtifact("fake_model"));
  ASSERT_GT(bytes.size(), 2000u);
  for (size_t size : {size_t{3}, size_t{10}, size_t{63}, size_t{64}, size_t{200}, size_t{1000},
                      bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE("truncated to " + std::to_string(size) + " bytes");
    testing::writeBytes(dir.file("model.so"), bytes.substr(0, size));
    Status status = openStatus(dir.file("model.so"));
    EXPECT_EQ(status.code(), TFC_DATA_LOSS) << status.toString();
    EXPECT_NE(std::string(status.message()).find("model.so: "), std::string::npos);
  }
  testing::writeBytes(dir.file("model.so"), bytes.substr(0, 1000));
  EXPECT_TRUE(isError(openStatus(dir.file("model.so")), TFC_DATA_LOSS, "model.so",
                      "truncated shared object"));
}

// The trailer's hash is XXH64 with seed 0 (tfc/artifact_checksum.h): the reference
// values, and the same hash whether fed at once or in stripes and a tail.
TEST(ArtifactChecksumTest, IsXxh64) {
  EXPECT_EQ(tfc_checksum64("", 0), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(tfc_checksum64("abc", 3), 0x44BC2CF5AD770999ull);
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>(i * 7 + 3);
  for (size_t size : {size_t{31}, size_t{32}, size_t{33}, size_t{100}, size_t{1000}}) {
    tfc_checksum_state_t state;
    tfc_checksum_init(&state);
    size_t whole = size - size % 32;
    tfc_checksum_stripes(&state, text.data(), 64 <= whole ? 64 : 0);
    tfc_checksum_stripes(&state, text.data() + (64 <= whole ? 64 : 0),
                         whole - (64 <= whole ? 64 : 0));
    EXPECT_EQ(tfc_checksum_finish(&state, text.data() + whole, size - whole),
              tfc_checksum64(text.data(), size))
        << size;
  }
}

// Issue 29: a model.so with bytes overwritten ended in an ld.so assertion or a SIGSEGV. The
// loader checks the checksum trailer the compiler appends before dlopen() sees the file.
TEST(ArtifactTest, DamagedOrUnsealedFilesAreRefusedBeforeLoading) {
  TempDir dir;
  std::string bytes = testing::readBytes(fakeArtifact("fake_model"));
  ASSERT_GT(bytes.size(), size_t{TFC_ARTIFACT_TRAILER_SIZE});
  ASSERT_EQ(bytes.substr(bytes.size() - TFC_ARTIFACT_TRAILER_SIZE, 8),
            TFC_ARTIFACT_TRAILER_MAGIC);
  testing::writeBytes(dir.file("model.so"), bytes);
  ASSERT_OK(openStatus(dir.file("model.so")));

  for (size_t at : {bytes.size() / 3, bytes.size() / 2, bytes.size() - 30}) {
    std::string damaged = bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x5a);
    testing::writeBytes(dir.file("model.so"), damaged);
    EXPECT_TRUE(isError(openStatus(dir.file("model.so")), TFC_DATA_LOSS, "model.so: ",
                        "is damaged: its checksum does not match (the file was changed after "
                        "tfc wrote it); recompile it"))
        << "byte " << at;
  }
  // No trailer: an older tfc's artifact, another linker's object, a cut file.
  testing::writeBytes(dir.file("model.so"),
                      bytes.substr(0, bytes.size() - TFC_ARTIFACT_TRAILER_SIZE));
  EXPECT_TRUE(isError(openStatus(dir.file("model.so")), TFC_DATA_LOSS, "model.so: ",
                      "has no tfc checksum: not written by this tfc, or truncated; recompile "
                      "it"));
  // Bytes appended after the trailer, or the trailer's own length changed.
  testing::writeBytes(dir.file("model.so"), bytes + bytes.substr(bytes.size() - 24));
  EXPECT_TRUE(isError(openStatus(dir.file("model.so")), TFC_DATA_LOSS, "model.so: ",
                      "is damaged"));
}

TEST(ArtifactTest, ExecutableIsNotASharedObject) {
  // /proc/self/exe is an ELF file; a non-PIE executable has type ET_EXEC, a PIE ET_DYN
  // without the artifact symbol. Either way: refused, no crash.
  Status status = openStatus("/proc/self/exe");
  EXPECT_FALSE(status.ok());
}

TEST(ArtifactTest, PlainSharedObjectIsNotAnArtifact) {
  EXPECT_TRUE(isError(openStatus(fakeArtifact("fake_plain_library")), TFC_INVALID_ARGUMENT,
                      "fake_plain_library.so", "does not export tfc_artifact_v6"));
}

TEST(ArtifactTest, OtherAbiSymbolSaysWhichVersion) {
  Status status = openStatus(fakeArtifact("fake_symbol_v1"));
  EXPECT_TRUE(isError(status, TFC_FAILED_PRECONDITION, "fake_symbol_v1.so",
                      "artifact ABI version 1 (it exports tfc_artifact_v1), but this runtime "
                      "reads version 6"));
  EXPECT_NE(std::string(status.message()).find("recompile the model with this tfc"),
            std::string::npos);
}

TEST(ArtifactTest, RelativePathWithoutSlashIsAFileNotALibraryName) {
  char previous[4096];
  ASSERT_NE(getcwd(previous, sizeof(previous)), nullptr);
  ASSERT_EQ(chdir(TFC_FAKE_ARTIFACT_DIR), 0);
  Status status = openStatus("fake_model.so");
  ASSERT_EQ(chdir(previous), 0);
  EXPECT_OK(status);
}

struct BrokenCase {
  int variant;
  tfc_status_code_t code;
  const char* keyword;
};

class BrokenArtifactTest : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(BrokenArtifactTest, IsRefusedWithAMessage) {
  const BrokenCase& c = GetParam();
  std::string name = "fake_break_" + std::to_string(c.variant);
  EXPECT_TRUE(isError(openStatus(fakeArtifact(name)), c.code, name + ".so", c.keyword));
}

INSTANTIATE_TEST_SUITE_P(
    All, BrokenArtifactTest,
    ::testing::Values(
        BrokenCase{1, TFC_DATA_LOSS, "bad magic 0xdeadbeef (expected 0x31434654"},
        BrokenCase{2, TFC_FAILED_PRECONDITION,
                   "artifact ABI version 7, but this runtime expects version 6; recompile the "
                   "model with this tfc"},
        BrokenCase{3, TFC_DATA_LOSS, "struct_size 16 is smaller"},
        BrokenCase{4, TFC_DATA_LOSS, "parameter #0 has no name"},
        BrokenCase{5, TFC_DATA_LOSS, "parameter 'bias' has rank 9 (allowed 0..8)"},
        BrokenCase{6, TFC_DATA_LOSS, "parameter 'proj.weight' has dimension 1 of size 0"},
        BrokenCase{7, TFC_DATA_LOSS, "parameter 'bias' has unknown dtype 99"},
        BrokenCase{8, TFC_DATA_LOSS, "entry 'decode' has a null function"},
        BrokenCase{9, TFC_DATA_LOSS, "duplicate parameter name 'scale'"},
        BrokenCase{10, TFC_DATA_LOSS, "duplicate entry name 'fail'"},
        BrokenCase{11, TFC_DATA_LOSS, "parameter 'bias': unknown initializer 'xavier'"},
        BrokenCase{12, TFC_DATA_LOSS, "returned a null table"},
        BrokenCase{13, TFC_DATA_LOSS,
                   "parameter 'bias': orthogonal initializer needs a tensor of rank >= 2"}),
    [](const ::testing::TestParamInfo<BrokenCase>& param) {
      return "Break" + std::to_string(param.param.variant);
    });

TEST(ArtifactTest, SkippingTheInitSpecCheckDefersItToInit) {
  tfc_artifact_options_t options;
  tfc_artifact_options_initialize(&options);
  options.skip_init_spec_check = true;
  auto artifact = Artifact::open(fakeArtifact("fake_break_11"), &options);
  ASSERT_OK(artifact);
  auto params = Params::create(*artifact);
  ASSERT_OK(params);
  EXPECT_TRUE(isError(params->init(0), TFC_DATA_LOSS, "fake_break_11.so", "xavier"));
}

TEST(ArtifactTest, HandlesKeepTheArtifactLoaded) {
  tfc_loaded_artifact_t* artifact = nullptr;
  ASSERT_EQ(tfc_artifact_open(fakeArtifact("fake_model").c_str(), nullptr, &artifact), nullptr);
  tfc_params_t* params = nullptr;
  ASSERT_EQ(tfc_params_create(artifact, nullptr, &params), nullptr);
  tfc_artifact_release(artifact);  // params still hold a reference
  ASSERT_EQ(tfc_params_init(params, 1), nullptr);
  tfc_context_t* context = nullptr;
  ASSERT_EQ(tfc_context_create(tfc_params_artifact(params), params, nullptr, &context), nullptr);
  tfc_params_release(params);  // the context holds both
  tfc_tensor_ref_t noInputs[1];
  tfc_status_t status = tfc_context_call(context, "fail_silent", noInputs, 0, nullptr, 0);
  EXPECT_EQ(tfc_status_code(status), TFC_INTERNAL);
  tfc_status_free(status);
  tfc_context_release(context);
}

TEST(ArtifactTest, NullArguments) {
  tfc_loaded_artifact_t* artifact = nullptr;
  tfc_status_t status = tfc_artifact_open(nullptr, nullptr, &artifact);
  EXPECT_EQ(tfc_status_code(status), TFC_INVALID_ARGUMENT);
  tfc_status_free(status);
  tfc_artifact_release(nullptr);
  tfc_params_release(nullptr);
  tfc_context_release(nullptr);
}

}  // namespace
}  // namespace tfc
