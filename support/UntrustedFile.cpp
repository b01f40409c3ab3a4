//===- UntrustedFile.cpp - reading files someone else wrote ---------------===//
#include "support/UntrustedFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace tfc {
namespace {

llvm::Error reason(const llvm::Twine &what) {
  return llvm::createStringError(std::make_error_code(std::errc::invalid_argument),
                                 what.str());
}

const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// "64 MiB" for whole mebibytes, else the bytes.
std::string sizeText(uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

} // namespace

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readUntrustedFile(llvm::StringRef path, uint64_t maxBytes,
                  llvm::StringRef what) {
  // O_NONBLOCK: opening a FIFO for reading returns at once instead of
  // waiting for a writer; fstat then refuses it. A regular file ignores it.
  std::string name = path.str();
  int fd;
  do
    fd = ::open(name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return reason(std::error_code(errno, std::generic_category()).message());
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return reason(std::error_code(errno, std::generic_category()).message());
  if (!S_ISREG(st.st_mode))
    return reason(llvm::Twine("it is ") + kindOf(st.st_mode) +
                  ", not a regular file");
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > maxBytes)
    return reason(llvm::formatv("it is {0} bytes; {1} may be at most {2} "
                                "({3} bytes)",
                                size, what, sizeText(maxBytes), maxBytes)
                      .str());
  auto buffer = llvm::MemoryBuffer::getOpenFile(
      llvm::sys::fs::convertFDToNativeFile(fd), path, size,
      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return reason(buffer.getError().message());
  return std::move(*buffer);
}

llvm::Error checkJsonDepth(llvm::StringRef text, unsigned maxDepth) {
  unsigned depth = 0;
  size_t line = 1, lineStart = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i; // \" and \\ do not end the string
      else if (c == '"')
        inString = false;
      else if (c == '\n') // invalid JSON; the parser says so
        ++line, lineStart = i + 1;
      continue;
    }
    switch (c) {
    case '"':
      inString = true;
      break;
    case '\n':
      ++line, lineStart = i + 1;
      break;
    case '[':
    case '{':
      if (++depth > maxDepth)
        return reason(llvm::formatv("JSON nested deeper than {0} levels "
                                    "(line {1}, column {2})",
                                    maxDepth, line, i - lineStart + 1)
                          .str());
      break;
    case ']':
    case '}':
      // An unbalanced bracket is the parser's to report.
      if (depth)
        --depth;
      break;
    default:
      break;
    }
  }
  return llvm::Error::success();
}

llvm::Expected<llvm::json::Value> parseBoundedJson(llvm::StringRef text,
                                                   unsigned maxDepth) {
  if (llvm::Error err = checkJsonDepth(text, maxDepth))
    return std::move(err);
  return llvm::json::parse(text);
}

} // namespace tfc
