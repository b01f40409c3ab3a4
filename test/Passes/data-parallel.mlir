// RUN: tfc-opt %s -tfc-autodiff -tfc-data-parallel="size=2 bucket-mb=-1" -verify-diagnostics | FileCheck %s
// RUN: tfc-opt %s -tfc-autodiff -tfc-data-parallel="size=4 bucket-mb=-1" -tfc-train-step | FileCheck %s --check-prefix=STEP

// Tests that, without buckets (bucket-mb < 0; buckets: data-parallel-buckets.mlir),
// every gradient of loss_grad and its loss are averaged over the
// "dp" ranks, each by a blocking tfc.all_reduce right after the op that makes it final, that the forward
// entry is untouched, and that the world size is recorded in the metadata,
// before the model's own keys.
// CHECK: module attributes {tfc.metadata = "{\22world_size\22: 2, \22model\22: \22tiny\22}"}
// CHECK-LABEL: func.func @loss(
// CHECK-NOT: tfc.all_reduce
// CHECK: return
// CHECK-LABEL: func.func @loss_grad(
// CHECK: %[[L:.*]] = tfc.reduce_mean
// CHECK-NEXT: %[[LR:.*]] = tfc.all_reduce %[[L]] {group = "dp", reduce = "mean", size = 2 : i64} : tensor<f32>
// CHECK: %[[GW:.*]] = tfc.matmul %arg0, %{{.*}} transpose_lhs
// CHECK-NEXT: %[[GWR:.*]] = tfc.all_reduce %[[GW]] {group = "dp", reduce = "mean", size = 2 : i64} : tensor<4x4xf32>
// CHECK: return %[[LR]], %[[GWR]]
// Tests that train_step clips and applies the averaged gradients.
// STEP-LABEL: func.func @train_step(
// STEP: tfc.all_reduce %{{.*}} {group = "dp", reduce = "mean", size = 4 : i64} : tensor<f32>
// STEP: tfc.all_reduce %{{.*}} {group = "dp", reduce = "mean", size = 4 : i64} : tensor<4x4xf32>
// STEP: tfc.store %{{.*}}, @w
module attributes {tfc.metadata = "{\"model\": \"tiny\"}"} {
tfc.param @w : tensor<4x4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4x4xf32>
  %y = tfc.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %l = tfc.reduce_mean %y dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
}
