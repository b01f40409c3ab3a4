//===- IRDumper.h - one numbered file per pass ------------------*- C++ -*-===//
#ifndef TFC_COMPILER_IRDUMPER_H
#define TFC_COMPILER_IRDUMPER_H

#include "llvm/Support/Error.h"
#include <memory>
#include <string>

namespace mlir {
class ModuleOp;
class PassInstrumentation;
} // namespace mlir

namespace tfc {

/// Creates `dir` (and parents) and writes `00-input.mlir` there.
llvm::Error startIRDump(const std::string &dir, mlir::ModuleOp module);

/// After every pass writes `NN-<pass-argument>.mlir` into `dir`, numbering on
/// from `*counter` + 1 (shared, so that several pass managers of one
/// compilation number their files in one sequence). Files are written
/// atomically; a failure to write is reported once on stderr and does not
/// stop compilation.
std::unique_ptr<mlir::PassInstrumentation>
createIRDumpInstrumentation(const std::string &dir,
                            std::shared_ptr<unsigned> counter);

} // namespace tfc

#endif // TFC_COMPILER_IRDUMPER_H
