// REQUIRES: cuda-target
// RUN: not tfc %s --target=cuda --compile-to=codegen -o /dev/null 2>&1 | FileCheck %s
// RUN: not tfc %s --target=cuda -o %t.so 2>&1 | FileCheck %s --check-prefix=ARTIFACT
// RUN: not ls %t.so
// RUN: not tfc %s --target=cuda --cuda-arch=sm_75 --compile-to=codegen -o /dev/null 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not tfc %s --target=gpu -o /dev/null 2>&1 | FileCheck %s --check-prefix=TARGET

// Tests that what the CUDA target cannot lower yet is named with its
// location, also when an artifact is asked for (and then none is written),
// and that an unknown architecture or target is named.

// CHECK-DAG: errors.mlir:[[@LINE+9]]:8: error: CUDA codegen: no kernel for tfc.fused "reduction" yet
// ARTIFACT: error: CUDA codegen: no kernel for tfc.fused "reduction" yet
// ARCH: tfc: error: unknown --cuda-arch='sm_75' (expected one of sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_120)
// TARGET: tfc: error: unknown --target='gpu' (this build has cpu, cuda)
// moe_ffn has an f32 kernel only, moe_ffn_grad none yet: named, not a crash.
// CHECK-DAG: errors.mlir:[[@LINE+14]]:8: error: CUDA codegen: no kernel for 'tfc.moe_ffn' in 'bf16' yet (f32 only)
// CHECK-DAG: errors.mlir:[[@LINE+18]]:10: error: CUDA codegen: no kernel for 'tfc.moe_ffn_grad' yet

func.func @f(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = tfc.fused "reduction" (%a) : (tensor<4x8xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %e = tfc.exp %x : tensor<4x8xf32>
    %s = tfc.reduce_sum %e dims = [-1] : tensor<4x8xf32> -> tensor<4xf32>
    tfc.yield %s : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

func.func @moe(%x: tensor<8x4xbf16>, %ids: tensor<8x1xi32>, %w: tensor<8x2xbf16>, %a: tensor<6x4xbf16>, %d: tensor<4x6xbf16>) -> tensor<8x4xbf16> {
  %y = tfc.moe_ffn %x, %ids, %w experts %a, %a, %d, %a, %a, %d : (tensor<8x4xbf16>, tensor<8x1xi32>, tensor<8x2xbf16>, tensor<6x4xbf16>, tensor<6x4xbf16>, tensor<4x6xbf16>, tensor<6x4xbf16>, tensor<6x4xbf16>, tensor<4x6xbf16>) -> tensor<8x4xbf16>
  return %y : tensor<8x4xbf16>
}

func.func @moe_grad(%x: tensor<8x4xf32>, %ids: tensor<8x1xi32>, %w: tensor<8x1xf32>, %a: tensor<6x4xf32>, %d: tensor<4x6xf32>) -> tensor<8x4xf32> {
  %g:5 = tfc.moe_ffn_grad %x, %ids, %w, %x experts %a, %a, %d : (tensor<8x4xf32>, tensor<8x1xi32>, tensor<8x1xf32>, tensor<8x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>) -> (tensor<8x4xf32>, tensor<8x1xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>)
  return %g#0 : tensor<8x4xf32>
}
