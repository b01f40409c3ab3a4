//===- tfc-opt.cpp - mlir-opt for the tfc dialect -------------------------===//
//
// Parses, verifies, transforms and prints tfc IR. Registers the tfc dialect,
// the upstream dialects tfc IR uses, and every tfc pass.
//
//===----------------------------------------------------------------------===//
#include "compiler/ParseGuard.h"
#include "compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tfc::registerDialects(registry);
  tfc::registerPasses();
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "tfc optimizer driver\n", registry);
  // MLIR 19's parser can corrupt the heap on some invalid input: a file
  // must parse in a child first (compiler/ParseGuard.h). Not for standard
  // input (it cannot be read twice), split files or -verify-diagnostics
  // (where errors in one chunk are expected and the others still run).
  auto config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (input != "-" && config.inputSplitMarker().empty() &&
      !config.shouldVerifyDiagnostics()) {
    std::string error;
    if (auto file = mlir::openInputFile(input, &error))
      if (mlir::failed(tfc::parseInChildFirst(
              "tfc-opt", input, *file, registry,
              config.shouldAllowUnregisteredDialects())))
        return 1;
  }
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, input, output, registry));
}
