//===- Registration.h - dialects and passes every tfc tool knows -*- C++ -*-===//
#ifndef TFC_COMPILER_REGISTRATION_H
#define TFC_COMPILER_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace tfc {

/// The tfc dialect and the upstream dialects that tfc IR uses (func).
void registerDialects(mlir::DialectRegistry &registry);

/// Every tfc pass and the upstream passes tfc pipelines use (canonicalize,
/// cse, symbol-dce), so that tfc-opt and tfc accept them by name.
/// Makes every target this build has known to codegen/target's registry
/// (idempotent). registerPasses calls it.
void registerTargets();

/// Registers every tfc pass, the upstream passes tfc uses, and the targets.
void registerPasses();

} // namespace tfc

#endif // TFC_COMPILER_REGISTRATION_H
