//===- OutputFile.cpp - where the compiler tools write their outputs ------===//
#include "support/OutputFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

namespace tfc {
namespace {

llvm::Error reason(const llvm::Twine &what) {
  return llvm::createStringError(std::make_error_code(std::errc::io_error), what.str());
}

/// `err` as "cannot write 'PATH': REASON" (OutputFile's errors stand alone).
llvm::Error naming(llvm::StringRef path, llvm::Error err) {
  if (!err)
    return err;
  return reason("cannot write '" + path + "': " + llvm::toString(std::move(err)));
}

/// Where the bytes for `path` go: `stream` for a device, FIFO or socket,
/// else `target`, the regular file to replace (the end of any symbolic links).
llvm::Error resolve(llvm::StringRef path, bool &stream, std::string &target) {
  stream = false;
  target = path.str();
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status, /*Follow=*/true)) {
    if (ec == std::errc::no_such_file_or_directory)
      return llvm::Error::success(); // a new file (or a dangling link: replaced)
    return reason(ec.message());
  }
  switch (status.type()) {
  case llvm::sys::fs::file_type::directory_file:
    return reason("it is a directory");
  case llvm::sys::fs::file_type::regular_file: {
    llvm::SmallString<256> real;
    if (!llvm::sys::fs::real_path(path, real))
      target = real.str().str();
    return llvm::Error::success();
  }
  default:
    stream = true;
    return llvm::Error::success();
  }
}

} // namespace

llvm::Error writeOutput(llvm::StringRef path,
                        llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  if (path == "-") {
    if (llvm::Error err = write(llvm::outs()))
      return err;
    llvm::outs().flush();
    if (llvm::outs().has_error())
      return reason(llvm::outs().error().message());
    return llvm::Error::success();
  }
  bool stream;
  std::string target;
  if (llvm::Error err = resolve(path, stream, target))
    return err;
  if (stream) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
    if (ec)
      return reason(ec.message());
    if (llvm::Error err = write(os))
      return err;
    os.close();
    if (os.has_error()) {
      std::string message = os.error().message();
      os.clear_error();
      return reason(message);
    }
    return llvm::Error::success();
  }
  // llvm::writeToOutput: a temporary next to the target, renamed over it.
  return llvm::writeToOutput(target, write);
}

llvm::Expected<OutputFile> OutputFile::create(llvm::StringRef path) {
  OutputFile file;
  file.path = path.str();
  std::string target;
  if (llvm::Error err = resolve(path, file.stream, target))
    return naming(path, std::move(err));
  if (file.stream) {
    int fd;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("tfc-output", "tmp", fd, file.temp))
      return naming(path, reason("cannot create a temporary file: " + ec.message()));
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  } else {
    file.target = target;
    if (std::error_code ec = llvm::sys::fs::createUniqueFile(
            target + ".tmp-%%%%%%", file.temp))
      return naming(path, reason(ec.message()));
  }
  return std::move(file);
}

OutputFile::OutputFile(OutputFile &&other) noexcept
    : path(std::move(other.path)), target(std::move(other.target)),
      stream(other.stream), temp(std::move(other.temp)) {
  other.temp.clear();
}

OutputFile::~OutputFile() {
  if (!temp.empty())
    llvm::sys::fs::remove(temp);
}

llvm::Error OutputFile::commit() {
  if (!stream) {
    if (std::error_code ec = llvm::sys::fs::rename(temp, target))
      return naming(path, reason(ec.message()));
    temp.clear();
    return llvm::Error::success();
  }
  auto bytes = llvm::MemoryBuffer::getFile(temp, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!bytes)
    return naming(path, reason(bytes.getError().message()));
  return naming(path, writeOutput(path, [&](llvm::raw_ostream &os) {
                  os << (*bytes)->getBuffer();
                  return llvm::Error::success();
                }));
}

} // namespace tfc
