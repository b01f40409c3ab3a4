//===- Report.h - `tfc --report=FILE.json` ----------------------*- C++ -*-===//
//
// The figures the optimization passes record on each planned entry (kernel
// count, bytes moved and FLOPs by the cost model, arena size and its lower
// bound, fusion, rematerialization and scheduling decisions), as one JSON
// document per compile.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_COMPILER_REPORT_H
#define TFC_COMPILER_REPORT_H

#include "llvm/ADT/StringRef.h"

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace tfc {

/// Writes the report of `module` (after tfc-lower-to-kernels and
/// tfc-plan-memory) to `os`. `input` and `settings` (a short description of
/// the options, e.g. "-O2 --no-remat") identify the compile.
void writeReport(mlir::ModuleOp module, llvm::StringRef input,
                 llvm::StringRef settings, llvm::raw_ostream &os);

} // namespace tfc

#endif // TFC_COMPILER_REPORT_H
