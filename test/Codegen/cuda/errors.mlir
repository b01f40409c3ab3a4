// REQUIRES: cuda-target
// RUN: not tfc %s --target=cuda --compile-to=codegen -o /dev/null 2>&1 | FileCheck %s
// RUN: not tfc %s --target=cuda -o %t.so 2>&1 | FileCheck %s --check-prefix=ARTIFACT
// RUN: not ls %t.so
// RUN: not tfc %s --target=cuda --cuda-arch=sm_75 --compile-to=codegen -o /dev/null 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not tfc %s --target=gpu -o /dev/null 2>&1 | FileCheck %s --check-prefix=TARGET

// Tests that what the CUDA target cannot lower yet is named with its
// location, also when an artifact is asked for (and then none is written),
// and that an unknown architecture or target is named.

// CHECK-DAG: errors.mlir:[[@LINE+6]]:8: error: CUDA codegen: no kernel for tfc.fused "reduction" yet
// ARTIFACT: error: CUDA codegen: no kernel for tfc.fused "reduction" yet
// ARCH: tfc: error: unknown --cuda-arch='sm_75' (expected one of sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_120)
// TARGET: tfc: error: unknown --target='gpu' (this build has cpu, cuda)

func.func @f(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = tfc.fused "reduction" (%a) : (tensor<4x8xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %e = tfc.exp %x : tensor<4x8xf32>
    %s = tfc.reduce_sum %e dims = [-1] : tensor<4x8xf32> -> tensor<4xf32>
    tfc.yield %s : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
