// RUN: tfc-opt %s -split-input-file -tfc-autodiff -verify-diagnostics | FileCheck %s

// Tests the VJP of tfc.all_reduce (Megatron's g): the gradient passes through
// unchanged for "sum" and divided by the group's size for "mean", with no
// collective in the backward.
// CHECK-LABEL: func.func @loss_grad
// CHECK: %[[Q:.*]] = tfc.constant dense<2.500000e-01> : tensor<f32>
// CHECK: tfc.mul %{{.*}}, %[[Q]]
// CHECK-NOT: tfc.all_reduce {{.*}}size = 4
// CHECK: return
tfc.param @w : tensor<4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = tfc.all_reduce %y {group = "tp", reduce = "mean", size = 4 : i64} : tensor<4xf32>
  %l = tfc.reduce_sum %r dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @loss_grad
// CHECK: %[[D:.*]] = tfc.broadcast_to
// CHECK-NEXT: tfc.mul %[[D]], %{{.*}}
// CHECK-NEXT: %[[G:.*]] = tfc.mul %[[D]], %arg0
// CHECK-NEXT: return %{{.*}}, %[[G]]
tfc.param @w : tensor<4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = tfc.all_reduce %y {group = "tp", reduce = "sum", size = 4 : i64} : tensor<4xf32>
  %l = tfc.reduce_sum %r dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests the VJP of tfc.reduce_scatter: every rank's block r reached rank r's
// result, so the gradient is the all-gather of the result's gradient
// (divided by the group's size for "mean").
// CHECK-LABEL: func.func @loss_grad
// CHECK: %[[AG:.*]] = tfc.all_gather %{{.*}} {group = "dp", size = 2 : i64} : tensor<2xf32> -> tensor<4xf32>
// CHECK: %[[H:.*]] = tfc.constant dense<5.000000e-01> : tensor<f32>
// CHECK: tfc.mul %[[AG]], %[[H]]
tfc.param @w : tensor<4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = tfc.reduce_scatter %y {group = "dp", reduce = "mean", size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
  %l = tfc.reduce_sum %r dims = [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests the VJP of tfc.all_gather: the result is replicated, so rank r's
// gradient is block r of the result's, the reduce-scatter (mean) of it.
// CHECK-LABEL: func.func @loss_grad
// CHECK: tfc.reduce_scatter %{{.*}} {group = "dp", reduce = "mean", size = 2 : i64} : tensor<8xf32> -> tensor<4xf32>
tfc.param @w : tensor<4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = tfc.all_gather %y {group = "dp", size = 2 : i64} : tensor<4xf32> -> tensor<8xf32>
  %l = tfc.reduce_sum %r dims = [0] : tensor<8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests the VJP of tfc.copy_to_group (Megatron's f): the identity in the
// forward; the gradient flowing back through it to @a is the all-reduce (sum)
// over the group of the cotangent each rank computes from its copy.
// CHECK-LABEL: func.func @loss_grad
// CHECK: %[[H:.*]] = tfc.mul %arg0, %{{.*}}
// CHECK-NEXT: %[[C:.*]] = tfc.copy_to_group %[[H]] {group = "tp", size = 2 : i64} : tensor<4xf32>
// CHECK: %[[DH:.*]] = tfc.all_reduce %{{.*}} {group = "tp", reduce = "sum", size = 2 : i64} : tensor<4xf32>
// CHECK: %[[GA:.*]] = tfc.mul %[[DH]], %arg0
// CHECK: return %{{.*}}, %[[GA]], %{{.*}}
tfc.param @a : tensor<4xf32> = "normal(0.0, 1.0)"
tfc.param @w : tensor<4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %a = tfc.load @a : tensor<4xf32>
  %w = tfc.load @w : tensor<4xf32>
  %h = tfc.mul %x, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %c = tfc.copy_to_group %h {group = "tp", size = 2 : i64} : tensor<4xf32>
  %y = tfc.mul %c, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = tfc.reduce_sum %y dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests the VJP of tfc.all_to_all: block r of rank s's x became block s of
// rank r's result, so the gradient is the all-to-all of the result's
// gradient, over the same group.
// CHECK-LABEL: func.func @loss_grad
// CHECK: tfc.all_to_all %{{.*}} {group = "ep", size = 2 : i64} : tensor<4xf32>
// CHECK: %[[ONES:.*]] = tfc.broadcast_to
// CHECK-NEXT: %[[D:.*]] = tfc.mul %[[ONES]], %arg1
// CHECK: %[[B:.*]] = tfc.all_to_all %[[D]] {group = "ep", size = 2 : i64} : tensor<4xf32>
// CHECK: %[[G:.*]] = tfc.mul %[[B]], %arg0
// CHECK: return %{{.*}}, %[[G]]
tfc.param @w : tensor<4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %z = tfc.all_to_all %y {group = "ep", size = 2 : i64} : tensor<4xf32>
  %p = tfc.mul %z, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = tfc.reduce_sum %p dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
