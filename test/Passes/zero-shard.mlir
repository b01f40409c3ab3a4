// RUN: tfc-opt %s -split-input-file -tfc-autodiff -tfc-data-parallel="size=2 bucket-mb=-1" -tfc-zero-shard -verify-diagnostics | FileCheck %s
// RUN: tfc-opt %s -split-input-file -tfc-autodiff -tfc-data-parallel="size=2 bucket-mb=-1" -tfc-zero-shard -tfc-train-step | FileCheck %s --check-prefix=STEP

// Tests that each gradient's all_reduce becomes the flattened gradient, padded
// with zeros to a multiple of the group's size (9 -> 10), reduce-scattered in
// its place (right after the op that makes it final), marked tfc.zero_shard;
// a size that divides (4) is not padded; the loss stays an all_reduce.
// CHECK-LABEL: func.func @loss_grad(
// CHECK-SAME: tensor<5xf32> {tfc.grad_of = "w", tfc.name = "grad.w", tfc.zero_shard = {group = "dp", size = 2 : i64}}
// CHECK-SAME: tensor<2xf32> {tfc.grad_of = "b", tfc.name = "grad.b", tfc.zero_shard = {group = "dp", size = 2 : i64}}
// CHECK: %[[L:.*]] = tfc.all_reduce %{{.*}} {group = "dp", reduce = "mean", size = 2 : i64} : tensor<f32>
// CHECK: %[[GB:.*]] = tfc.reduce_scatter %{{.*}} {group = "dp", reduce = "mean", size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
// CHECK: %[[GW:.*]] = tfc.matmul %arg0, %{{.*}} transpose_lhs
// CHECK-NEXT: %[[F:.*]] = tfc.reshape %[[GW]] : tensor<3x3xf32> -> tensor<9xf32>
// CHECK-NEXT: %[[Z:.*]] = tfc.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK-NEXT: %[[P:.*]] = tfc.concat %[[F]], %[[Z]] dim = 0 : (tensor<9xf32>, tensor<1xf32>) -> tensor<10xf32>
// CHECK-NEXT: %[[SW:.*]] = tfc.reduce_scatter %[[P]] {group = "dp", reduce = "mean", size = 2 : i64} : tensor<10xf32> -> tensor<5xf32>
// CHECK-NOT: tfc.all_reduce
// CHECK: return %[[L]], %[[SW]], %[[GB]]

// Tests that train_step keeps the moments as shards and lists them for the
// runtime's checkpoints; takes the clipping norm from the shards with one
// all_reduce (sum); finds the rank from a reduce-scatter of [0, 1]; updates
// the rank's block of the padded parameter and all-gathers it back, dropping
// the padding.
// STEP: module attributes {tfc.metadata = "{\22zero_shards\22: \22opt.m.w=w,opt.v.w=w,opt.m.b=b,opt.v.b=b\22, \22world_size\22: 2}"}
// STEP-DAG: tfc.state @opt.m.w : tensor<5xf32> = "zeros"
// STEP-DAG: tfc.state @opt.v.w : tensor<5xf32> = "zeros"
// STEP-DAG: tfc.state @opt.m.b : tensor<2xf32> = "zeros"
// STEP-LABEL: func.func @train_step(
// STEP: tfc.reduce_sum %{{.*}} dims = [0] : tensor<2xf32> -> tensor<f32>
// STEP-NEXT: %[[SQ:.*]] = tfc.add %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32> -> tensor<f32>
// STEP-NEXT: %{{.*}} = tfc.all_reduce %[[SQ]] {group = "dp", reduce = "sum", size = 2 : i64} : tensor<f32>
// STEP: %[[RANKS:.*]] = tfc.constant dense<[0.000000e+00, 1.000000e+00]> : tensor<2xf32>
// STEP-NEXT: %{{.*}} = tfc.reduce_scatter %[[RANKS]] {group = "dp", reduce = "sum", size = 2 : i64} : tensor<2xf32> -> tensor<1xf32>
// STEP: %[[RANK:.*]] = tfc.cast %{{.*}} : tensor<f32> -> tensor<i32>
// STEP: %[[W:.*]] = tfc.load @w : tensor<3x3xf32>
// STEP-NEXT: %[[WF:.*]] = tfc.reshape %[[W]] : tensor<3x3xf32> -> tensor<9xf32>
// STEP: %[[WP:.*]] = tfc.concat %[[WF]], %{{.*}} dim = 0 : (tensor<9xf32>, tensor<1xf32>) -> tensor<10xf32>
// STEP-NEXT: %[[ROWS:.*]] = tfc.reshape %[[WP]] : tensor<10xf32> -> tensor<2x5xf32>
// STEP-NEXT: %{{.*}} = tfc.dynamic_slice %[[ROWS]][%[[RANK]]] dim = 0 : (tensor<2x5xf32>, tensor<i32>) -> tensor<1x5xf32>
// STEP: tfc.load @opt.m.w : tensor<5xf32>
// STEP: tfc.store %{{.*}}, @opt.m.w : tensor<5xf32>
// STEP: %[[AG:.*]] = tfc.all_gather %{{.*}} {group = "dp", size = 2 : i64} : tensor<5xf32> -> tensor<10xf32>
// STEP-NEXT: %[[UNPAD:.*]] = tfc.slice %[[AG]] start = [0] limit = [9] stride = [1] : tensor<10xf32> -> tensor<9xf32>
// STEP-NEXT: %[[NEW:.*]] = tfc.reshape %[[UNPAD]] : tensor<9xf32> -> tensor<3x3xf32>
// STEP-NEXT: tfc.store %[[NEW]], @w : tensor<3x3xf32>
// STEP: tfc.all_gather %{{.*}} {group = "dp", size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
// STEP: tfc.store %{{.*}}, @b : tensor<4xf32>
tfc.param @w : tensor<3x3xf32> = "normal(0.0, 1.0)"
tfc.param @b : tensor<4xf32> = "zeros"
func.func @loss(%x: tensor<2x3xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<3x3xf32>
  %y = tfc.matmul %x, %w : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x3xf32>
  %l = tfc.reduce_mean %y dims = [0, 1] : tensor<2x3xf32> -> tensor<f32>
  %b = tfc.load @b : tensor<4xf32>
  %bs = tfc.reduce_sum %b dims = [0] : tensor<4xf32> -> tensor<f32>
  %r = tfc.add %l, %bs : tensor<f32>, tensor<f32> -> tensor<f32>
  return %r : tensor<f32>
}
