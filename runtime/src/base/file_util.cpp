#include "base/file_util.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>

#include <fmt/format.h>

#include "tfc/runtime/file.hpp"

namespace tfc::internal {
namespace {

tfc_status_code_t codeForErrno(int error) {
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return TFC_NOT_FOUND;
    case ENOMEM:
      return TFC_OUT_OF_MEMORY;
    default:
      return TFC_IO_ERROR;
  }
}

// Closes a file descriptor on scope exit.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int get() const { return fd_; }
  // Gives the descriptor up: the destructor then leaves it open.
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes now, returning close()'s errno (0 on success); the destructor then does nothing.
  int closeNow() {
    int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

Status writeAll(int fd, const uint8_t* data, size_t size, const std::string& path,
                const std::string& tempPath) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      return Status::error(codeForErrno(error), "%s: write to temporary file '%s' failed: %s",
                           path.c_str(), tempPath.c_str(), std::strerror(error));
    }
    done += static_cast<size_t>(n);
  }
  return Status();
}

std::string directoryOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string baseNameOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A suffix unlikely to collide between threads and processes; O_EXCL settles the rest.
std::string randomSuffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t processSeed = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device() ^ static_cast<uint64_t>(::getpid());
  }();
  uint64_t value = processSeed + 0x9E3779B97F4A7C15ull * (counter.fetch_add(1) + 1);
  value ^= value >> 31;
  return fmt::format(FMT_STRING("{:016x}"), value).substr(0, 8);
}

// "a character device", "a directory", ... for messages about a file that is not regular.
const char* describeFileType(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Follows |path| through symbolic links (each link's target relative to the link's folder)
// to the path that is finally written: a regular file or one that does not exist yet. A
// rename over a link would replace the link itself, so the writer must rename over what
// the link names. Refuses anything else that exists: renaming over a device node (as root)
// would turn /dev/full into a regular file.
StatusOr<std::string> resolveWriteTarget(const std::string& path, struct stat* targetInfo,
                                         bool* exists) {
  std::string current = path;
  for (int depth = 0; depth < 40; ++depth) {
    struct stat info;
    if (::lstat(current.c_str(), &info) != 0) {
      int error = errno;
      if (error == ENOENT) {
        *exists = false;
        return current;
      }
      return Status::error(codeForErrno(error), "%s: cannot stat '%s': %s", path.c_str(),
                           current.c_str(), std::strerror(error));
    }
    if (S_ISLNK(info.st_mode)) {
      std::vector<char> buffer(static_cast<size_t>(info.st_size > 0 ? info.st_size : 255) + 2);
      ssize_t length = ::readlink(current.c_str(), buffer.data(), buffer.size() - 1);
      if (length < 0) {
        int error = errno;
        return Status::error(TFC_IO_ERROR, "%s: cannot read the symbolic link '%s': %s",
                             path.c_str(), current.c_str(), std::strerror(error));
      }
      std::string target(buffer.data(), static_cast<size_t>(length));
      if (target.empty()) {
        return Status::error(TFC_INVALID_ARGUMENT, "%s: the symbolic link '%s' is empty",
                             path.c_str(), current.c_str());
      }
      current = target[0] == '/' ? target : directoryOf(current) + "/" + target;
      continue;
    }
    if (!S_ISREG(info.st_mode)) {
      std::string through = current == path ? "" : " (the symbolic link's target '" + current + "')";
      return Status::error(TFC_INVALID_ARGUMENT,
                           "%s%s is %s; refusing to replace it with a regular file (write to a "
                           "regular file's path instead)",
                           path.c_str(), through.c_str(), describeFileType(info.st_mode));
    }
    *targetInfo = info;
    *exists = true;
    return current;
  }
  return Status::error(TFC_INVALID_ARGUMENT,
                       "%s: too many levels of symbolic links (a loop?) ending at '%s'",
                       path.c_str(), current.c_str());
}

// The temporaries of |target| are "<name>.tmp.<pid>.<random>". Removes those whose writer
// process is gone (kill(pid, 0) fails with ESRCH): a writer killed in the middle of a save
// (SIGKILL, power loss) cannot clean up, and its temporary may be as large as the file.
// A live writer's temporary is never touched, so concurrent saves stay safe. (A writer in
// another PID namespace sharing the folder would look dead; tfc does not support that.)
void removeStaleTemporaries(const std::string& target) {
  const std::string prefix = baseNameOf(target) + ".tmp.";
  DIR* directory = ::opendir(directoryOf(target).c_str());
  if (directory == nullptr) return;  // the create below reports any real problem
  std::vector<std::string> stale;
  while (struct dirent* entry = ::readdir(directory)) {
    std::string name = entry->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    // "<pid>.<8 hex digits>" and nothing else.
    std::string rest = name.substr(prefix.size());
    size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos || dot > 10 || rest.size() - dot - 1 != 8) continue;
    bool digits = true;
    for (size_t i = 0; i < dot; ++i) digits &= std::isdigit(static_cast<unsigned char>(rest[i])) != 0;
    for (size_t i = dot + 1; i < rest.size(); ++i) {
      digits &= std::isxdigit(static_cast<unsigned char>(rest[i])) != 0;
    }
    if (!digits) continue;
    long long pid = std::atoll(rest.substr(0, dot).c_str());
    if (pid <= 0 || pid > INT32_MAX || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) stale.push_back(name);
  }
  ::closedir(directory);
  for (const std::string& name : stale) {
    std::string stalePath = directoryOf(target) + "/" + name;
    struct stat info;
    // Only regular files: a name that merely looks like ours is left alone otherwise.
    if (::lstat(stalePath.c_str(), &info) == 0 && S_ISREG(info.st_mode)) ::unlink(stalePath.c_str());
  }
}

}  // namespace

Status readAt(int fd, uint8_t* out, size_t size, off_t offset, const std::string& path) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out + done, size - done, offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      return Status::error(TFC_IO_ERROR, "%s: read failed: %s", path.c_str(), std::strerror(error));
    }
    if (n == 0) {
      return Status::error(TFC_IO_ERROR, "%s: file shrank while being read (%zu of %zu bytes)",
                           path.c_str(), done, size);
    }
    done += static_cast<size_t>(n);
  }
  return Status();
}


StatusOr<FileContents> readFile(const std::string& path, FileMapping mapping) {
  // Devices and pipes could block forever or never end: refused without blocking.
  TFC_ASSIGN_OR_RETURN(int fd, openRegularFileForRead(path));
  FdCloser closer(fd);
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    return Status::error(TFC_IO_ERROR, "%s: cannot stat: %s", path.c_str(), std::strerror(error));
  }
  if (info.st_size < 0 || static_cast<uint64_t>(info.st_size) > SIZE_MAX) {
    return Status::error(TFC_IO_ERROR, "%s: file size %lld is not addressable", path.c_str(),
                         static_cast<long long>(info.st_size));
  }
  FileContents contents;
  contents.size = static_cast<size_t>(info.st_size);
  if (contents.size == 0) {
    static const uint8_t kEmpty[1] = {0};
    contents.data = kEmpty;
    return contents;
  }
  if (mapping != FileMapping::kNone) {
    bool writable = mapping == FileMapping::kCopyOnWrite;
    void* bytes = ::mmap(nullptr, contents.size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                         MAP_PRIVATE, fd, 0);
    if (bytes == MAP_FAILED && writable) {
      // A writable private mapping counts against the commit limit (strict overcommit can
      // refuse it); a read-only one still spares reading the whole file into memory.
      writable = false;
      bytes = ::mmap(nullptr, contents.size, PROT_READ, MAP_PRIVATE, fd, 0);
    }
    if (bytes != MAP_FAILED) {
      const int kept = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
      if (kept >= 0) {
        contents.fd = std::shared_ptr<const int>(new int(kept), [](const int* p) {
          ::close(*p);
          delete p;
        });
      }
      size_t size = contents.size;
      contents.owner = std::shared_ptr<const void>(bytes, [size](const void* p) {
        ::munmap(const_cast<void*>(p), size);
      });
      contents.data = static_cast<const uint8_t*>(bytes);
      contents.mapped = true;
      contents.writable = writable;
      return contents;
    }
    // Some file systems cannot map; reading is always possible.
  }
  auto* buffer = static_cast<uint8_t*>(std::malloc(contents.size));
  if (buffer == nullptr) {
    return Status::error(TFC_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes to read the file",
                         path.c_str(), contents.size);
  }
  contents.owner = std::shared_ptr<const void>(buffer, [](const void* p) {
    std::free(const_cast<void*>(p));
  });
  contents.data = buffer;
  contents.writable = true;
  TFC_RETURN_IF_ERROR(readAt(fd, buffer, contents.size, 0, path));
  return contents;
}

Status readMapped(const FileContents& contents, const void* data, void* out, size_t size,
                  const std::string& path) {
  const auto* from = static_cast<const uint8_t*>(data);
  if (!contents.mapped || !contents.fd) {
    std::memcpy(out, from, size);
    return Status();
  }
  return readAt(*contents.fd, static_cast<uint8_t*>(out), size,
                static_cast<off_t>(from - contents.data), path);
}

void releaseMappedPages(const FileContents& contents, const void* data, size_t size) {
  if (!contents.mapped) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  const auto end = (reinterpret_cast<uintptr_t>(data) + size) & ~(page - 1);
  // Only advice: a failure leaves the pages resident, which is merely what happens without.
  if (begin < end) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

Status writeFileAtomically(const std::string& path, const std::vector<ByteSpan>& chunks) {
  if (path.empty()) return Status(TFC_INVALID_ARGUMENT, "cannot write a file with an empty path");
  if (path.back() == '/') {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: path names a directory, not a file",
                         path.c_str());
  }

  struct stat targetInfo {};
  bool targetExists = false;
  TFC_ASSIGN_OR_RETURN(std::string target, resolveWriteTarget(path, &targetInfo, &targetExists));
  removeStaleTemporaries(target);

  // Create the temporary file next to the target, so that the rename stays within one file
  // system and is atomic. O_EXCL guarantees we never clobber someone else's file; the
  // 0666 mode lets the umask decide permissions as for any new file. The pid in the name
  // lets a later save tell a dead writer's leftovers from a live writer's file.
  std::string tempPath;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tempPath = target + ".tmp." + std::to_string(::getpid()) + "." + randomSuffix();
    fd = ::open(tempPath.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int error = errno;
    return Status::error(codeForErrno(error), "%s: cannot create temporary file '%s': %s",
                         path.c_str(), tempPath.c_str(), std::strerror(error));
  }
  // Replacing a file keeps its permission bits (a file made private stays private).
  if (targetExists) (void)::fchmod(fd, targetInfo.st_mode & 07777);

  FdCloser closer(fd);
  // Every failure from here on removes the temporary file.
  auto fail = [&](Status status) {
    if (closer.get() >= 0) closer.closeNow();
    ::unlink(tempPath.c_str());
    return status;
  };

  for (const ByteSpan& chunk : chunks) {
    Status status = writeAll(fd, static_cast<const uint8_t*>(chunk.data), chunk.size, path,
                             tempPath);
    if (!status.ok()) return fail(std::move(status));
  }
  if (::fsync(fd) != 0) {
    int error = errno;
    return fail(Status::error(TFC_IO_ERROR, "%s: fsync of temporary file '%s' failed: %s",
                              path.c_str(), tempPath.c_str(), std::strerror(error)));
  }
  if (int error = closer.closeNow(); error != 0) {
    return fail(Status::error(TFC_IO_ERROR, "%s: close of temporary file '%s' failed: %s",
                              path.c_str(), tempPath.c_str(), std::strerror(error)));
  }
  if (::rename(tempPath.c_str(), target.c_str()) != 0) {
    int error = errno;
    return fail(Status::error(codeForErrno(error), "%s: cannot rename temporary file '%s' into place: %s",
                              path.c_str(), tempPath.c_str(), std::strerror(error)));
  }
  // Make the rename itself durable. The new file is already in place, so a failure here is
  // not reported: there is nothing left to undo, and the data was fsync'ed.
  int directoryFd = ::open(directoryOf(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directoryFd >= 0) {
    ::fsync(directoryFd);
    ::close(directoryFd);
  }
  return Status();
}

std::string quoteForMessage(std::string_view text, size_t maxLength) {
  std::string out = "'";
  size_t shown = text.size() <= maxLength ? text.size() : maxLength;
  for (size_t i = 0; i < shown; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      fmt::format_to(std::back_inserter(out), FMT_STRING("\\x{:02x}"), c);
    } else {
      out += static_cast<char>(c);  // UTF-8 passes through; invalid bytes are harmless here
    }
  }
  out += '\'';
  if (shown < text.size()) {
    out += "... (" + std::to_string(text.size()) + " bytes)";
  }
  return out;
}

bool isValidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    uint32_t codePoint;
    if ((c & 0xE0) == 0xC0) {
      length = 2;
      codePoint = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3;
      codePoint = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4;
      codePoint = c & 0x07;
    } else {
      return false;
    }
    if (n - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      codePoint = (codePoint << 6) | (p[i + k] & 0x3F);
    }
    static const uint32_t kMinimum[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (codePoint < kMinimum[length]) return false;                  // overlong
    if (codePoint >= 0xD800 && codePoint <= 0xDFFF) return false;  // surrogate
    if (codePoint > 0x10FFFF) return false;
    i += length;
  }
  return true;
}

}  // namespace tfc::internal

namespace tfc {

Status writeFileAtomically(const std::string& path, const void* data, size_t size) {
  return internal::writeFileAtomically(path, {{data, size}});
}

StatusOr<int> openRegularFileForRead(const std::string& path) {
  if (path.empty()) return Status(TFC_INVALID_ARGUMENT, "cannot read a file with an empty path");
  // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, for ever; the
  // type is checked on the descriptor (no window between a stat and the open).
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    struct stat info;
    // A socket cannot be opened at all (ENXIO): say what it is rather than "no such device".
    if (error == ENXIO && ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
      return Status::error(TFC_INVALID_ARGUMENT, "%s: is %s, not a regular file", path.c_str(),
                           internal::describeFileType(info.st_mode));
    }
    return Status::error(internal::codeForErrno(error), "%s: cannot open: %s", path.c_str(),
                         std::strerror(error));
  }
  internal::FdCloser closer(fd);
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    return Status::error(TFC_IO_ERROR, "%s: cannot stat: %s", path.c_str(), std::strerror(error));
  }
  if (S_ISDIR(info.st_mode)) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: is a directory, not a file", path.c_str());
  }
  if (!S_ISREG(info.st_mode)) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: is %s, not a regular file", path.c_str(),
                         S_ISFIFO(info.st_mode) ? "a named pipe (FIFO)"
                                                : internal::describeFileType(info.st_mode));
  }
  // Reads of a regular file never block anyway; cleared so that callers see a plain file.
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    int error = errno;
    return Status::error(TFC_IO_ERROR, "%s: cannot set the descriptor's flags: %s", path.c_str(),
                         std::strerror(error));
  }
  return closer.release();
}

namespace {

// What a path is for checkDistinctFiles: an existing file by device and inode, a file yet
// to be written by its folder's canonical path and its name, or nothing to compare.
struct FileIdentity {
  enum class Kind { kNone, kInode, kName } kind = Kind::kNone;
  dev_t device = 0;
  ino_t inode = 0;
  std::string name;

  bool operator==(const FileIdentity& other) const {
    if (kind == Kind::kNone || kind != other.kind) return false;
    return kind == Kind::kInode ? device == other.device && inode == other.inode
                                : name == other.name;
  }
};

bool skipped(const std::string& path) { return path.empty() || path == "-"; }

FileIdentity inputIdentity(const std::string& path) {
  FileIdentity identity;
  struct stat info;
  // stat, not lstat: a symbolic link to a file is that file. A missing input cannot be
  // destroyed (its reader reports it).
  if (skipped(path) || ::stat(path.c_str(), &info) != 0) return identity;
  identity.kind = FileIdentity::Kind::kInode;
  identity.device = info.st_dev;
  identity.inode = info.st_ino;
  return identity;
}

FileIdentity outputIdentity(const std::string& path) {
  FileIdentity identity;
  if (skipped(path)) return identity;
  // What the atomic writer would replace: the end of a chain of links. A node that is not a
  // regular file (/dev/null) is not destroyed by a write (the writer refuses the others).
  struct stat info;
  bool exists = false;
  auto target = internal::resolveWriteTarget(path, &info, &exists);
  if (!target.ok()) return identity;
  if (exists) {
    identity.kind = FileIdentity::Kind::kInode;
    identity.device = info.st_dev;
    identity.inode = info.st_ino;
    return identity;
  }
  std::string name = internal::baseNameOf(*target);
  if (name.empty() || name == "." || name == "..") return identity;
  char* folder = ::realpath(internal::directoryOf(*target).c_str(), nullptr);
  if (folder == nullptr) return identity;  // a missing folder: the write fails and says so
  std::string canonical = folder;
  std::free(folder);
  identity.kind = FileIdentity::Kind::kName;
  identity.name = (canonical == "/" ? "" : canonical) + "/" + name;
  return identity;
}

std::string describeRole(const NamedFile& file) {
  return file.role + " " + internal::quoteForMessage(file.path);
}

}  // namespace

Status checkDistinctFiles(const std::vector<NamedFile>& inputs,
                          const std::vector<NamedFile>& outputs) {
  std::vector<FileIdentity> inputIds, outputIds;
  for (const NamedFile& input : inputs) inputIds.push_back(inputIdentity(input.path));
  for (size_t o = 0; o < outputs.size(); ++o) {
    const NamedFile& output = outputs[o];
    outputIds.push_back(outputIdentity(output.path));
    const FileIdentity& id = outputIds.back();
    if (id.kind == FileIdentity::Kind::kNone) continue;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!(id == inputIds[i])) continue;
      if (!output.replaces.empty() && output.replaces == inputs[i].role) continue;
      return Status::error(TFC_INVALID_ARGUMENT,
                           "%s is the same file as %s; refusing to overwrite it",
                           describeRole(output).c_str(), describeRole(inputs[i]).c_str());
    }
    for (size_t p = 0; p < o; ++p) {
      if (!(id == outputIds[p])) continue;
      return Status::error(TFC_INVALID_ARGUMENT,
                           "%s is the same file as %s; refusing to write one over the other",
                           describeRole(output).c_str(), describeRole(outputs[p]).c_str());
    }
  }
  return Status();
}

}  // namespace tfc
