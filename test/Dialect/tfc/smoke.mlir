// RUN: tfc-opt %s | tfc-opt | FileCheck %s

// Tests that a module with a parameter, a state and an entry round-trips.
// CHECK: tfc.param @wte.weight : tensor<16x8xf32> = "normal(0.0, 0.02)"
// CHECK: tfc.state @kv : tensor<1x2x16x4xf32> = "zeros"
// CHECK-LABEL: func.func @forward
// CHECK: tfc.embedding
module {
  tfc.param @"wte.weight" : tensor<16x8xf32> = "normal(0.0, 0.02)"
  tfc.state @"kv" : tensor<1x2x16x4xf32> = "zeros"
  func.func @forward(%ids: tensor<2x4xi32>) -> tensor<2x4x16xf32> {
    %w = tfc.load @"wte.weight" : tensor<16x8xf32>
    %e = tfc.embedding %w, %ids : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %l = tfc.matmul %e, %w transpose_rhs : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    return %l : tensor<2x4x16xf32>
  }
}
