// Tests of the atomic writer every file the runtime writes goes through: what it refuses
// to replace, how it writes through symbolic links, and that it removes the temporaries of
// writers killed during a save; and of readFile's copy-on-write mapping.
#include "base/file_util.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "test_util.hpp"
#include "tfc/runtime/file.hpp"

namespace tfc {
namespace {

using testing::TempDir;

Status write(const std::string& path, const std::string& bytes) {
  return internal::writeFileAtomically(path, {{bytes.data(), bytes.size()}});
}

bool isSymlink(const std::string& path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode);
}

// The pid of a process that has exited and been reaped.
pid_t deadPid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST(AtomicWrite, ReplacesAFileAndLeavesNoTemporary) {
  TempDir dir;
  ASSERT_OK(write(dir.file("a.bin"), "old"));
  ASSERT_OK(write(dir.file("a.bin"), "new contents"));
  EXPECT_EQ(testing::readBytes(dir.file("a.bin")), "new contents");
  EXPECT_EQ(dir.list(), std::vector<std::string>{"a.bin"});
}

// A FIFO stands for any node that is not a regular file: a rename over it would replace
// it, as a save to /dev/full run as root used to replace the device. (The test does not
// use /dev/full itself: a regression would destroy the machine's device node.)
TEST(AtomicWrite, RefusesToReplaceANonRegularFile) {
  TempDir dir;
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(testing::isError(write(fifo, "x"), TFC_INVALID_ARGUMENT, fifo, "a named pipe"));
  struct stat info;
  ASSERT_EQ(::lstat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  EXPECT_EQ(dir.list(), std::vector<std::string>{"pipe"});
}

// A character device that behaves as /dev/full: as root, a clone made with mknod in the
// scratch folder, so that a regression replaces the clone and never the machine's
// /dev/full; otherwise /dev/full itself, which a non-root writer cannot replace.
std::string fullDevice(const TempDir& dir) {
  std::string clone = dir.file("full");
  if (::mknod(clone.c_str(), S_IFCHR | 0600, makedev(1, 7)) == 0) return clone;
  return "/dev/full";
}

TEST(AtomicWrite, RefusesACharacterDeviceWithoutTouchingIt) {
  TempDir dir;
  const std::string device = fullDevice(dir);
  EXPECT_TRUE(testing::isError(write(device, "x"), TFC_INVALID_ARGUMENT, device,
                               "a character device"));
  struct stat info;
  ASSERT_EQ(::lstat(device.c_str(), &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode)) << device << " is no longer a device";
  for (const std::string& name : dir.list()) EXPECT_EQ(name.find(".tmp."), std::string::npos);
}

TEST(AtomicWrite, RefusesADirectory) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("d").c_str(), 0700), 0);
  EXPECT_TRUE(testing::isError(write(dir.file("d"), "x"), TFC_INVALID_ARGUMENT, dir.file("d"),
                               "a directory"));
}

TEST(AtomicWrite, WritesThroughSymbolicLinks) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("real").c_str(), 0700), 0);
  ASSERT_OK(write(dir.file("real/ckpt"), "old"));
  // link -> chain -> real/ckpt, relative targets resolved against each link's folder.
  ASSERT_EQ(::symlink("real/ckpt", dir.file("chain").c_str()), 0);
  ASSERT_EQ(::symlink("chain", dir.file("link").c_str()), 0);
  ASSERT_OK(write(dir.file("link"), "new"));
  EXPECT_TRUE(isSymlink(dir.file("link")));
  EXPECT_TRUE(isSymlink(dir.file("chain")));
  EXPECT_EQ(testing::readBytes(dir.file("real/ckpt")), "new");
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"chain", "link", "real"}));
}

TEST(AtomicWrite, CreatesTheTargetOfADanglingLink) {
  TempDir dir;
  ASSERT_EQ(::symlink(dir.file("target").c_str(), dir.file("link").c_str()), 0);
  ASSERT_OK(write(dir.file("link"), "data"));
  EXPECT_TRUE(isSymlink(dir.file("link")));
  EXPECT_EQ(testing::readBytes(dir.file("target")), "data");
}

TEST(AtomicWrite, RefusesALinkToADevice) {
  TempDir dir;
  const std::string device = fullDevice(dir);
  ASSERT_EQ(::symlink(device.c_str(), dir.file("link").c_str()), 0);
  EXPECT_TRUE(testing::isError(write(dir.file("link"), "x"), TFC_INVALID_ARGUMENT, device,
                               "a character device"));
  EXPECT_TRUE(isSymlink(dir.file("link")));
}

TEST(AtomicWrite, RefusesALinkLoop) {
  TempDir dir;
  ASSERT_EQ(::symlink("b", dir.file("a").c_str()), 0);
  ASSERT_EQ(::symlink("a", dir.file("b").c_str()), 0);
  EXPECT_TRUE(testing::isError(write(dir.file("a"), "x"), TFC_INVALID_ARGUMENT, dir.file("a"),
                               "too many levels of symbolic links"));
}

TEST(AtomicWrite, KeepsThePermissionsOfTheFileItReplaces) {
  TempDir dir;
  ASSERT_OK(write(dir.file("private"), "old"));
  ASSERT_EQ(::chmod(dir.file("private").c_str(), 0600), 0);
  ASSERT_OK(write(dir.file("private"), "new"));
  struct stat info;
  ASSERT_EQ(::stat(dir.file("private").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

// A writer killed during a save leaves "<name>.tmp.<pid>.<random>"; the next save of the
// same file removes it, but never a live writer's temporary or another file's.
TEST(AtomicWrite, RemovesTemporariesOfDeadWriters) {
  TempDir dir;
  const std::string dead = std::to_string(deadPid());
  const std::string live = std::to_string(::getppid());
  testing::writeBytes(dir.file("ckpt.tmp." + dead + ".0123abcd"), "partial");
  testing::writeBytes(dir.file("ckpt.tmp." + live + ".0123abcd"), "in progress");
  testing::writeBytes(dir.file("other.tmp." + dead + ".0123abcd"), "not ours");
  testing::writeBytes(dir.file("ckpt.tmp.notapid"), "not our pattern");
  ASSERT_OK(write(dir.file("ckpt"), "data"));
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"ckpt", "ckpt.tmp." + live + ".0123abcd",
                                                  "ckpt.tmp.notapid",
                                                  "other.tmp." + dead + ".0123abcd"}));
}

TEST(AtomicWrite, RemovesTemporariesBesideALinksTarget) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("real").c_str(), 0700), 0);
  ASSERT_EQ(::symlink("real/ckpt", dir.file("link").c_str()), 0);
  const std::string stale = "real/ckpt.tmp." + std::to_string(deadPid()) + ".89abcdef";
  testing::writeBytes(dir.file(stale), "partial");
  ASSERT_OK(write(dir.file("link"), "data"));
  EXPECT_FALSE(std::ifstream(dir.file(stale)).good()) << stale << " was left behind";
}

TEST(AtomicWrite, PublicWrapperWritesTheBytes) {
  TempDir dir;
  ASSERT_OK(writeFileAtomically(dir.file("f"), "abc", 3));
  EXPECT_EQ(testing::readBytes(dir.file("f")), "abc");
}

// Writes through a copy-on-write mapping stay in the process; the file keeps its bytes.
// Released pages read the file again.
TEST(ReadFile, CopyOnWriteMappingNeverWritesTheFile) {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  std::string bytes(3 * 4096 + 100, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 1);
  testing::writeBytes(path, bytes);
  auto contents = internal::readFile(path, internal::FileMapping::kCopyOnWrite);
  ASSERT_OK(contents);
  ASSERT_TRUE(contents->mapped);
  ASSERT_TRUE(contents->writable);
  auto* data = const_cast<uint8_t*>(contents->data);
  data[0] = 0xAB;
  data[5000] = 0xCD;
  EXPECT_EQ(contents->data[5000], 0xCD);
  EXPECT_EQ(testing::readBytes(path), bytes);
  // Released (never-written) pages come back from the file: the page of byte 5000 was
  // written, so release only the later ones.
  internal::releaseMappedPages(*contents, data + 8192, bytes.size() - 8192);
  EXPECT_EQ(std::memcmp(data + 8192, bytes.data() + 8192, bytes.size() - 8192), 0);
  EXPECT_EQ(contents->data[5000], 0xCD);

  auto readOnly = internal::readFile(path, internal::FileMapping::kReadOnly);
  ASSERT_OK(readOnly);
  EXPECT_TRUE(readOnly->mapped);
  EXPECT_FALSE(readOnly->writable);
  auto read = internal::readFile(path, internal::FileMapping::kNone);
  ASSERT_OK(read);
  EXPECT_FALSE(read->mapped);
  EXPECT_TRUE(read->writable);  // a buffer of our own
  EXPECT_EQ(std::memcmp(read->data, bytes.data(), bytes.size()), 0);
}

// checkDistinctFiles: an output that is an input or another output, under any spelling.
TEST(DistinctFiles, RefusesAnOutputThatIsAnInputNamingBoth) {
  TempDir dir;
  testing::writeBytes(dir.file("m.so"), "model");
  Status status = checkDistinctFiles({{"the model", dir.file("m.so"), ""}},
                                     {{"--log", dir.file("m.so"), ""}});
  EXPECT_TRUE(testing::isError(status, TFC_INVALID_ARGUMENT, "--log '" + dir.file("m.so"),
                               "is the same file as the model '" + dir.file("m.so") +
                                   "'; refusing to overwrite it"));
  // Another spelling of the same path is the same file.
  EXPECT_FALSE(checkDistinctFiles({{"--data", dir.file("m.so"), ""}},
                                  {{"--log", dir.path() + "/./m.so", ""}})
                   .ok());
}

TEST(DistinctFiles, FollowsHardAndSymbolicLinks) {
  TempDir dir;
  testing::writeBytes(dir.file("data.bin"), "tokens");
  ASSERT_EQ(::link(dir.file("data.bin").c_str(), dir.file("hard.bin").c_str()), 0);
  ASSERT_EQ(::symlink("data.bin", dir.file("soft.bin").c_str()), 0);
  for (const char* name : {"hard.bin", "soft.bin"}) {
    SCOPED_TRACE(name);
    // The link as the output, and as the input.
    EXPECT_TRUE(testing::isError(checkDistinctFiles({{"--data", dir.file("data.bin"), ""}},
                                                    {{"--log", dir.file(name), ""}}),
                                 TFC_INVALID_ARGUMENT, dir.file(name), "--data"));
    EXPECT_TRUE(testing::isError(checkDistinctFiles({{"--data", dir.file(name), ""}},
                                                    {{"--log", dir.file("data.bin"), ""}}),
                                 TFC_INVALID_ARGUMENT, dir.file(name), "--log"));
  }
  // A copy is another file.
  testing::writeBytes(dir.file("copy.bin"), "tokens");
  EXPECT_OK(checkDistinctFiles({{"--data", dir.file("data.bin"), ""}},
                               {{"--log", dir.file("copy.bin"), ""}}));
}

TEST(DistinctFiles, TwoOutputsToOneNewFile) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("sub").c_str(), 0700), 0);
  // Not there yet: compared by the folder's canonical path and the name.
  EXPECT_TRUE(testing::isError(
      checkDistinctFiles({}, {{"--save", dir.file("ck"), ""}, {"--plot", dir.file("sub/../ck"), ""}}),
      TFC_INVALID_ARGUMENT, "--plot", "is the same file as --save '" + dir.file("ck") + "'"));
  // A dangling link names the file it would create.
  ASSERT_EQ(::symlink("new.bin", dir.file("link").c_str()), 0);
  EXPECT_FALSE(
      checkDistinctFiles({}, {{"--save", dir.file("new.bin"), ""}, {"--log", dir.file("link"), ""}})
          .ok());
  EXPECT_OK(checkDistinctFiles({}, {{"--save", dir.file("a"), ""}, {"--log", dir.file("b"), ""}}));
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"link", "sub"}));  // nothing created
}

TEST(DistinctFiles, SkipsDevicesStdoutEmptyPathsAndMissingInputs) {
  TempDir dir;
  EXPECT_OK(checkDistinctFiles({{"--data", "/dev/null", ""}},
                               {{"--log", "/dev/null", ""}, {"--plot", "/dev/null", ""}}));
  EXPECT_OK(checkDistinctFiles({{"the input", "-", ""}}, {{"-o", "-", ""}, {"--x", "-", ""}}));
  EXPECT_OK(checkDistinctFiles({{"--eval-data", "", ""}}, {{"--log", "", ""}, {"--plot", "", ""}}));
  EXPECT_OK(checkDistinctFiles({{"--data", dir.file("missing"), ""}},
                               {{"--log", dir.file("other"), ""}}));
}

TEST(DistinctFiles, AnOutputMayReplaceTheInputItUpdatesInPlace) {
  TempDir dir;
  testing::writeBytes(dir.file("ck"), "checkpoint");
  EXPECT_OK(checkDistinctFiles({{"--resume", dir.file("ck"), ""}},
                               {{"--save", dir.file("ck"), "--resume"}}));
  // Only that input: the same file as the data is still refused.
  EXPECT_FALSE(checkDistinctFiles({{"--data", dir.file("ck"), ""}},
                                  {{"--save", dir.file("ck"), "--resume"}})
                   .ok());
}

// Readers open without blocking: a FIFO with no writer is refused at once, not waited on.
TEST(OpenForRead, RefusesAFifoWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(testing::isError(openRegularFileForRead(fifo).status(), TFC_INVALID_ARGUMENT, fifo,
                               "is a named pipe (FIFO), not a regular file"));
  EXPECT_TRUE(testing::isError(internal::readFile(fifo, internal::FileMapping::kNone).status(),
                               TFC_INVALID_ARGUMENT, fifo, "not a regular file"));
  EXPECT_TRUE(testing::isError(openRegularFileForRead(dir.path()).status(), TFC_INVALID_ARGUMENT,
                               dir.path(), "is a directory"));
  EXPECT_TRUE(testing::isError(openRegularFileForRead(dir.file("none")).status(), TFC_NOT_FOUND,
                               dir.file("none"), "cannot open"));
  EXPECT_FALSE(openRegularFileForRead("").ok());
  // A regular file: a blocking descriptor that reads.
  testing::writeBytes(dir.file("f"), "abc");
  auto fd = openRegularFileForRead(dir.file("f"));
  ASSERT_OK(fd.status());
  EXPECT_EQ(::fcntl(*fd, F_GETFL) & O_NONBLOCK, 0);
  char bytes[4] = {0};
  EXPECT_EQ(::read(*fd, bytes, sizeof(bytes)), 3);
  ::close(*fd);
}

}  // namespace
}  // namespace tfc
