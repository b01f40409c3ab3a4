#include "tfc/runtime/text_output_file.hpp"

#include <cerrno>
#include <cstring>

namespace tfc {

StatusOr<TextOutputFile> TextOutputFile::open(const std::string& path,
                                              const std::string& label) {
  TextOutputFile file;
  file.path_ = path;
  file.label_ = label;
  file.file_.reset(std::fopen(path.c_str(), "w"));
  if (!file.file_) return file.error("cannot open it for writing", errno);
  return file;
}

Status TextOutputFile::error(const char* step, int error) const {
  return Status::error(TFC_IO_ERROR, "%s %s: %s: %s", label_.c_str(), path_.c_str(), step,
                       error != 0 ? std::strerror(error) : "unknown error");
}

Status TextOutputFile::write(const std::string& text) {
  if (!file_) return error("write after close", EBADF);
  // stdio keeps the first error sticky, so checking after the flush catches a failure of
  // any earlier buffered write too.
  errno = 0;
  if (std::fputs(text.c_str(), file_.get()) == EOF || std::fflush(file_.get()) != 0 ||
      std::ferror(file_.get())) {
    return error("write failed", errno);
  }
  return Status();
}

Status TextOutputFile::close() {
  if (!file_) return error("closed twice", EBADF);
  errno = 0;
  bool failed = std::ferror(file_.get()) != 0;
  failed |= std::fclose(file_.release()) != 0;
  if (failed) return error("write failed on close", errno);
  return Status();
}

}  // namespace tfc
