// Tests that tfc runs its pipeline, writes the result, prints the summary,
// dumps one numbered file per pass and stops at the requested phase.

// RUN: tfc %s --compile-to=graph -o %t.mlir --summary | FileCheck %s --check-prefix=SUMMARY
// RUN: FileCheck %s --check-prefix=GRAPH < %t.mlir
// RUN: rm -rf %t.dump && tfc %s --compile-to=graph --dump-ir=%t.dump -o /dev/null
// RUN: ls %t.dump | FileCheck %s --check-prefix=DUMP
// RUN: rm -rf %t.off && tfc %s --compile-to=graph --dump-ir=%t.off --no-remat --no-fuse --no-schedule -o /dev/null
// RUN: ls %t.off | FileCheck %s --check-prefix=OFF
// RUN: rm -rf %t.o1 && tfc %s -O1 --compile-to=graph --dump-ir=%t.o1 -o /dev/null
// RUN: ls %t.o1 | FileCheck %s --check-prefix=OFF
// RUN: FileCheck %s --check-prefix=GRAPH < %t.dump/02-cse.mlir
// RUN: tfc %s --compile-to=input | FileCheck %s --check-prefix=INPUT
// RUN: tfc %s -O0 --compile-to=graph | FileCheck %s --check-prefix=INPUT
// RUN: tfc %s --compile-to=graph --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT

// SUMMARY: module: 1 parameters, 128 values (512 B), 0 frozen
// SUMMARY: state: 0 tensors, 0 values (0 B)
// SUMMARY: entry @forward(tensor<2x4xi32>) -> (tensor<2x4x8xf32>): 2 ops
// SUMMARY-NEXT: tfc.load x1, tfc.embedding x1

// The canonicalizer folds the double negation and the identity transpose.
// GRAPH-LABEL: func.func @forward
// GRAPH-NEXT: tfc.load
// GRAPH-NEXT: tfc.embedding
// GRAPH-NEXT: return

// DUMP: 00-input.mlir
// DUMP-NEXT: 01-canonicalize.mlir
// DUMP-NEXT: 02-cse.mlir
// DUMP-NEXT: 03-tfc-remat.mlir
// DUMP-NEXT: 04-tfc-fuse.mlir
// DUMP-NEXT: 05-tfc-schedule.mlir

// Each -O2 graph optimization can be switched off; -O1 runs none of them.
// OFF: 00-input.mlir
// OFF-NEXT: 01-canonicalize.mlir
// OFF-NEXT: 02-cse.mlir
// OFF-NOT: tfc-

// INPUT: tfc.neg
// INPUT: tfc.transpose

// PRINT: IR Dump After Canonicalizer (canonicalize)
// PRINT: IR Dump After CSE (cse)
// PRINT: IR Dump After TfcRemat (tfc-remat)
// PRINT: IR Dump After TfcFuse (tfc-fuse)
// PRINT: IR Dump After TfcSchedule (tfc-schedule)

tfc.param @"wte.weight" : tensor<16x8xf32> = "normal(0.0, 0.02)"
func.func @forward(%ids: tensor<2x4xi32>) -> tensor<2x4x8xf32> {
  %w = tfc.load @"wte.weight" : tensor<16x8xf32>
  %e = tfc.embedding %w, %ids : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %n = tfc.neg %e : tensor<2x4x8xf32>
  %nn = tfc.neg %n : tensor<2x4x8xf32>
  %t = tfc.transpose %nn perm = [0, 1, 2] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %t : tensor<2x4x8xf32>
}
