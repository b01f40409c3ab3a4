// RUN: tfc-opt %s -tfc-autodiff -tfc-microbatch="count=2" | FileCheck %s
// RUN: tfc-opt %s -tfc-autodiff -tfc-microbatch="count=2" -tfc-fuse | FileCheck %s --check-prefix=FUSE

// Tests that loss_grad takes 2 x the traced rows, runs the traced forward and
// backward on each half in turn (the second forward after the first
// backward), sums the losses and the gradients in micro-batch order, marks
// the running sums, returns their means, leaves `loss` at the traced batch
// and records the count in the metadata.
// CHECK: module attributes {tfc.metadata = "{\22microbatches\22: 2, \22model\22: \22tiny\22}"}
// CHECK-LABEL: func.func @loss(%{{.*}}: tensor<2x4xf32>)
// CHECK-LABEL: func.func @loss_grad(
// CHECK-SAME: %[[X:.*]]: tensor<4x4xf32>) -> (tensor<f32>, tensor<4x4xf32>
// CHECK: %[[X0:.*]] = tfc.slice %[[X]] start = [0, 0] limit = [2, 4] stride = [1, 1]
// CHECK: tfc.matmul %[[X0]],
// CHECK: %[[L0:.*]] = tfc.reduce_mean
// CHECK: %[[G0:.*]] = tfc.matmul %[[X0]], %{{.*}} transpose_lhs
// CHECK: %[[X1:.*]] = tfc.slice %[[X]] start = [2, 0] limit = [4, 4] stride = [1, 1]
// CHECK: tfc.matmul %[[X1]],
// CHECK: %[[L1:.*]] = tfc.reduce_mean
// CHECK: %[[G1:.*]] = tfc.matmul %[[X1]], %{{.*}} transpose_lhs
// CHECK: %[[L:.*]] = tfc.add %[[L0]], %[[L1]] {tfc.accumulator}
// CHECK: %[[G:.*]] = tfc.add %[[G0]], %[[G1]] {tfc.accumulator}
// CHECK: %[[HALF:.*]] = tfc.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[LM:.*]] = tfc.mul %[[L]], %[[HALF]]
// CHECK: %[[GM:.*]] = tfc.mul %[[G]], %{{.*}}
// CHECK: return %[[LM]], %[[GM]]
// Tests that the fuser keeps the accumulator out of the final scaling: fusing
// it there would keep every micro-batch's gradient alive to the end.
// FUSE-LABEL: func.func @loss_grad(
// FUSE: tfc.add %{{.*}}, %{{.*}} {tfc.accumulator} : tensor<4x4xf32>
module attributes {tfc.metadata = "{\"model\": \"tiny\"}"} {
tfc.param @w : tensor<4x4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4x4xf32>
  %y = tfc.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %l = tfc.reduce_mean %y dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
}
