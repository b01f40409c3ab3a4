//===- UntrustedFile.h - reading files someone else wrote --------*- C++ -*-===//
//
// The compiler's rule for a file it did not write (a downloaded config.json):
//  - it must be a regular file, found out without blocking: a FIFO named
//    config.json would otherwise wait in open() for a writer for ever;
//  - it is read whole only up to a size limit, named with the file's size;
//  - JSON in it is parsed only when it nests at most 64 levels deep (as the
//    runtime's parsers), checked by a scan before llvm::json::parse, whose
//    recursion a 50,000-level file would overflow the stack with.
// Errors are the reason alone; the caller names the file.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_SUPPORT_UNTRUSTEDFILE_H
#define TFC_SUPPORT_UNTRUSTEDFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>

namespace tfc {

/// The deepest JSON nesting the compiler parses (objects and arrays).
constexpr unsigned kMaxJsonDepth = 64;

/// Reads `path` whole when it is a regular file of at most `maxBytes` bytes.
/// `what` names the kind of file in the size message ("a config.json").
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readUntrustedFile(llvm::StringRef path, uint64_t maxBytes,
                  llvm::StringRef what);

/// An error naming the line and column where `text` nests objects and arrays
/// deeper than `maxDepth`; brackets inside strings do not count.
llvm::Error checkJsonDepth(llvm::StringRef text,
                           unsigned maxDepth = kMaxJsonDepth);

/// checkJsonDepth, then llvm::json::parse.
llvm::Expected<llvm::json::Value>
parseBoundedJson(llvm::StringRef text, unsigned maxDepth = kMaxJsonDepth);

} // namespace tfc

#endif // TFC_SUPPORT_UNTRUSTEDFILE_H
