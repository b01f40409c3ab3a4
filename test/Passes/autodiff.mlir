// RUN: tfc-opt %s -split-input-file -tfc-autodiff -verify-diagnostics | FileCheck %s

// Tests that a parameter used twice gets the sum of both gradients, a frozen
// parameter gets none, and the gradient entry returns the loss first.
// CHECK-LABEL: func.func @loss_grad
// CHECK-SAME: -> (tensor<f32>, tensor<4xf32> {tfc.grad_of = "w", tfc.name = "grad.w"})
// CHECK: %[[Y:.*]] = tfc.mul %{{.*}}, %[[W:.*]] :
// CHECK: %[[Z:.*]] = tfc.add %[[Y]], %[[W]]
// CHECK: tfc.constant dense<1.000000e+00> : tensor<f32>
// The add's gradient reaches @w directly, the mul's through x; both summed.
// CHECK: %[[SUM:.*]] = tfc.add %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK: return %{{.*}}, %[[SUM]] : tensor<f32>, tensor<4xf32>
tfc.param @w : tensor<4xf32> = "normal(0.0, 1.0)"
tfc.param @frozen : tensor<4xf32> = "ones" frozen
func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4xf32>
  %f = tfc.load @frozen : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %z = tfc.add %y, %w : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %u = tfc.mul %z, %f : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %l = tfc.reduce_mean %u dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that token ids carry no gradient and that the embedding table's
// gradient is a scatter-add, and the loss's a fused cross-entropy gradient.
// The table is tied to the output projection: the scatter adds onto the
// projection's weight gradient (`into`), with no zeroed table and no add.
// CHECK-LABEL: func.func @loss_grad
// CHECK: %[[CE:.*]] = tfc.cross_entropy_grad
// CHECK: %[[DW:.*]] = tfc.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<6x16xf32>, tensor<6x8xf32> -> tensor<16x8xf32>
// CHECK-NOT: tfc.add
// CHECK: %[[DT:.*]] = tfc.embedding_grad %{{.*}}, %arg0 into %[[DW]] : (tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<16x8xf32>
// CHECK: return %{{.*}}, %[[DT]]
tfc.param @wte : tensor<16x8xf32> = "normal(0.0, 0.02)"
func.func @loss(%ids: tensor<2x3xi32>, %targets: tensor<2x3xi32>) -> tensor<f32> {
  %w = tfc.load @wte : tensor<16x8xf32>
  %e = tfc.embedding %w, %ids : tensor<16x8xf32>, tensor<2x3xi32> -> tensor<2x3x8xf32>
  %logits = tfc.linear %e, %w transpose_weight : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
  %l = tfc.cross_entropy %logits, %targets ignore_index = -100 : tensor<2x3x16xf32>, tensor<2x3xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that an untied table's gradient is the scatter alone (no `into`), and
// that a table read by two embeddings gets one scatter onto the other.
// CHECK-LABEL: func.func @loss_grad
// CHECK: %[[A:.*]] = tfc.embedding_grad %{{.*}}, %arg0 : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<16x8xf32>
// CHECK-NOT: tfc.add
// CHECK: %[[B:.*]] = tfc.embedding_grad %{{.*}}, %arg1 into %[[A]] :
// CHECK: return %{{.*}}, %[[B]]
tfc.param @table : tensor<16x8xf32> = "normal(0.0, 0.02)"
func.func @loss(%ids: tensor<2x3xi32>, %more: tensor<2x3xi32>) -> tensor<f32> {
  %w = tfc.load @table : tensor<16x8xf32>
  %e = tfc.embedding %w, %ids : tensor<16x8xf32>, tensor<2x3xi32> -> tensor<2x3x8xf32>
  %f = tfc.embedding %w, %more : tensor<16x8xf32>, tensor<2x3xi32> -> tensor<2x3x8xf32>
  %p = tfc.mul %e, %f : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  %l = tfc.reduce_mean %p dims = [0, 1, 2] : tensor<2x3x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that an op without a VJP on the path to the loss is an error.
tfc.param @w : tensor<2x4xf32> = "normal(0.0, 1.0)"
func.func @loss() -> tensor<f32> {
  %w = tfc.load @w : tensor<2x4xf32>
  // expected-error @+1 {{the VJP of reduce_max is not implemented}}
  %m = tfc.reduce_max %w dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %m : tensor<f32>
}

// -----

// Tests that constants and inputs on the path to the loss need no VJP (they
// do not depend on a parameter), and that no gradient is built toward them.
// CHECK-LABEL: func.func @loss_grad
// CHECK: tfc.reduce_max
// CHECK: return %{{.*}}, %{{.*}} : tensor<f32>, tensor<4xf32>
tfc.param @w : tensor<4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %c = tfc.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %m = tfc.reduce_max %x dims = [0] keepdim : tensor<4xf32> -> tensor<1xf32>
  %w = tfc.load @w : tensor<4xf32>
  %y = tfc.mul %w, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %z = tfc.mul %y, %m : tensor<4xf32>, tensor<1xf32> -> tensor<4xf32>
  %l = tfc.reduce_sum %z dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that the loss must be a 0-d float.
// expected-error @+1 {{'loss' must return exactly one 0-d float loss}}
func.func @loss(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
