//===- FileIdentity.h - outputs that must not be the tool's inputs -*- C++ -*-===//
//
// The rule (docs/reliability.md, "Outputs and untrusted files"): an output
// that is the same file as an input, or as another output, is refused before
// any work, naming both. "The same file" is decided by the file system, not
// by the strings: an existing file by its device and inode after following
// symbolic links (so a link, a hard link or `./x` is caught), a file still to
// be created by its folder's real path and its name. "-" (standard input or
// output) and anything that is neither a regular file nor a folder (/dev/null,
// a FIFO, a terminal) are written in place and never destroyed: skipped.
//
// The runtime (tfc-run, the Python bindings) has its own copy of this rule:
// the compiler and the runtime do not link each other.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_SUPPORT_FILEIDENTITY_H
#define TFC_SUPPORT_FILEIDENTITY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace tfc {

/// A path a tool reads or writes and what names it in messages: the flag
/// ("-o", "--report") or a word ("the input").
struct NamedPath {
  std::string what;
  std::string path;
};

/// An error when two of `inputs` and `outputs` are one file and at least one
/// of them is an output: "-o 'x.mlir' is the same file as the input
/// 'x.mlir'". Empty paths and "-" are skipped (the caller refuses an empty
/// path on its own).
llvm::Error checkDistinctFiles(llvm::ArrayRef<NamedPath> inputs,
                               llvm::ArrayRef<NamedPath> outputs);

/// Whether `path` (existing or not) names an entry directly inside the
/// folder `dir`, after resolving links and dots: for an output that writes
/// files of its own into a folder (tfc --dump-ir=DIR).
bool isDirectlyInside(llvm::StringRef path, llvm::StringRef dir);

/// Whether `path` and `other` are the same file by the rule above (false
/// when either is skipped).
bool isSameFile(llvm::StringRef path, llvm::StringRef other);

} // namespace tfc

#endif // TFC_SUPPORT_FILEIDENTITY_H
