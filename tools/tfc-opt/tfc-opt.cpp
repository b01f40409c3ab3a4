//===- tfc-opt.cpp - mlir-opt for the tfc dialect -------------------------===//
//
// Parses, verifies, transforms and prints tfc IR. Registers the tfc dialect,
// the upstream dialects tfc IR uses, and every tfc pass.
//
//===----------------------------------------------------------------------===//
#include "compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tfc::registerDialects(registry);
  tfc::registerPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tfc optimizer driver\n", registry));
}
