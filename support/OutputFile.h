//===- OutputFile.h - where the compiler tools write their outputs -*- C++ -*-===//
//
// One rule for every file tfc, tfc-trace and the artifact writer produce:
//  - a regular file (or a new one) is written through a temporary file in the
//    same folder and a rename, so a failure never leaves a half-written or
//    destroyed output;
//  - a symbolic link is followed, and its target is replaced that way (the
//    link stays);
//  - a character device, FIFO or socket (/dev/null, /dev/stdout, a pipe) is
//    written in place, never replaced by a regular file (which, as root, would
//    turn /dev/null into a file);
//  - a directory is refused, by name;
//  - "-" is standard output.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_SUPPORT_OUTPUTFILE_H
#define TFC_SUPPORT_OUTPUTFILE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace tfc {

/// Writes `path` with `write` by the rule above. Errors say why (the caller
/// names the path: "cannot write 'PATH': " + message).
llvm::Error writeOutput(llvm::StringRef path,
                        llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write);

/// The same for an output another program writes (the linker's model.so):
/// give it tempPath(), then commit() puts the result in place by the rule
/// above. The temporary is removed when the OutputFile goes away uncommitted.
/// Its errors stand alone: "cannot write 'PATH': why".
class OutputFile {
public:
  static llvm::Expected<OutputFile> create(llvm::StringRef path);
  OutputFile(OutputFile &&other) noexcept;
  OutputFile &operator=(OutputFile &&) = delete;
  ~OutputFile();

  llvm::StringRef tempPath() const { return temp; }
  llvm::Error commit();

private:
  OutputFile() = default;
  std::string path;          // as given, for messages
  std::string target;        // where the rename goes ("" for a stream target)
  bool stream = false;       // a device or FIFO: copy the temporary into it
  llvm::SmallString<256> temp;
};

} // namespace tfc

#endif // TFC_SUPPORT_OUTPUTFILE_H
