#ifndef TFC_RUNTIME_TEXT_OUTPUT_FILE_HPP_
#define TFC_RUNTIME_TEXT_OUTPUT_FILE_HPP_

#include <cstdio>
#include <memory>
#include <string>

#include "tfc/runtime/status.hpp"

namespace tfc {

// A text file written as it goes (a CSV log). Every write is flushed and
// checked, and close() reports what fclose reports, so a full disk or a device such as
// /dev/full is an error that names the file and the system's reason, never a log cut short
// in silence.
class TextOutputFile {
 public:
  // Creates or truncates |path|; |label| (a tool's option, "--log") starts every message.
  static StatusOr<TextOutputFile> open(const std::string& path, const std::string& label);
  // Writes |text| and flushes it.
  Status write(const std::string& text);
  // Closes the file; a later write or close is an error. The destructor closes an open file
  // without a report (for paths that already failed).
  Status close();
  const std::string& path() const { return path_; }

 private:
  TextOutputFile() = default;
  Status error(const char* step, int error) const;
  struct Closer {
    void operator()(FILE* file) const { std::fclose(file); }
  };
  std::unique_ptr<FILE, Closer> file_;
  std::string path_, label_;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_TEXT_OUTPUT_FILE_HPP_
