//===- ParseGuard.h - parse untrusted MLIR text in a child first -*- C++ -*-===//
//
// MLIR 19's parser corrupts the heap while it cleans up after some errors:
// a value used in one function and defined in a later one (a forward
// reference that outlives its function) followed by another parse error
// frees an op that the cleanup then writes to (llvm-project#107121; fixed
// upstream by #127778 in LLVM 21, not in the Debian LLVM 19 we build on).
// The corruption shows up later, anywhere: tfc printed the right error and
// then aborted in malloc (issue 13, defect 2). A related upstream bug
// crashes while parsing (a loop's iter_args naming a value defined inside it).
//
// Both only happen on input that does not parse. So tfc and tfc-opt first
// parse the text in a forked child that sends its diagnostics through a pipe
// and exits without running any destructor. Only text the child parsed is
// parsed again in the tool itself, where the parser's error path is then
// never taken. A child that dies is reported as an error naming the input,
// not a crash (its own stderr, where glibc's "corrupted ..." would go, is
// /dev/null: the parent prints the diagnostics it sent).
// Valid input costs one more parse (milliseconds for the library's models).
//
// Header-only so that tfc (compiler/Driver.cpp) and tfc-opt share it without
// a new library. Remove it once tfc builds on LLVM 21.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_COMPILER_PARSEGUARD_H
#define TFC_COMPILER_PARSEGUARD_H

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/Block.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <fcntl.h>
#include <csignal>
#include <string>
#include <cstdio>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

namespace tfc {

/// Parses `buffer` (named `name` in messages) in a forked child. Returns
/// success when it parses (verification is left to the caller's own parse);
/// failure after the child printed its diagnostics, or after a message when
/// the child died. Also success when fork fails (then the tool parses as
/// it always did).
inline llvm::LogicalResult parseInChildFirst(llvm::StringRef tool,
                                             llvm::StringRef name,
                                             const llvm::MemoryBuffer &buffer,
                                             const mlir::DialectRegistry &registry,
                                             bool allowUnregisteredDialects) {
  // The bug is in the text parser; bytecode has its own reader.
  if (mlir::isBytecode(buffer.getMemBufferRef()))
    return llvm::success();
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
  int fds[2];
  if (::pipe(fds) != 0)
    return llvm::success();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return llvm::success();
  }
  if (pid == 0) {
    ::close(fds[0]);
    // Die without LLVM's stack dump or glibc's message: the parent names
    // the input instead.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE, SIGTRAP})
      std::signal(sig, SIG_DFL);
    int devNull = ::open("/dev/null", O_WRONLY);
    if (devNull >= 0)
      ::dup2(devNull, 2);
    llvm::raw_fd_ostream diagnostics(fds[1], /*shouldClose=*/false,
                                     /*unbuffered=*/true);
    // No threads: the parent's thread pool does not exist in the child.
    mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
    context.allowUnregisteredDialects(allowUnregisteredDialects);
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(buffer.getBuffer(), name,
                                         /*RequiresNullTerminator=*/false),
        llvm::SMLoc());
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context, diagnostics);
    mlir::Block block;
    // Verified too, as the tool's own parse will: some upstream verifiers of
    // MLIR 19 crash on invalid attributes (linalg.transpose on a permutation
    // index out of range), inside the same parse call.
    mlir::ParserConfig config(&context, /*verifyAfterParse=*/true);
    bool ok = mlir::succeeded(mlir::parseSourceFile(sourceMgr, &block, config));
    // _exit: no destructor may run over a heap the parser may have corrupted.
    ::_exit(ok ? 0 : 1);
  }
  // Read to the end before waiting: the child blocks on a full pipe.
  ::close(fds[1]);
  std::string text;
  char chunk[4096];
  for (;;) {
    ssize_t n = ::read(fds[0], chunk, sizeof(chunk));
    if (n > 0)
      text.append(chunk, n);
    else if (n == 0 || errno != EINTR)
      break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return llvm::success();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return llvm::success(); // (the tool's own parse reports any warning)
  llvm::errs() << text;
  // A child that died, or that stopped without a diagnostic (under ASan it
  // exits 1 after a report of the parser's stray access, sent to /dev/null
  // with the rest of its stderr), still leaves the user a message.
  std::string how;
  if (WIFSIGNALED(status))
    how = "crashed on it (signal " + std::to_string(WTERMSIG(status)) + ", " +
          ::strsignal(WTERMSIG(status));
  else if (text.empty())
    how = "stopped on it without a message (exit " +
          std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  if (!how.empty())
    llvm::errs() << tool << ": error: '" << name
                 << "' does not parse, and MLIR 19's parser " << how
                 << ", a known MLIR 19 bug on invalid input: "
                    "llvm-project#127778); the errors above, if any, say "
                    "where; else look for a value used before its definition "
                    "or outside its function\n";
  return llvm::failure();
}

} // namespace tfc

#endif // TFC_COMPILER_PARSEGUARD_H
