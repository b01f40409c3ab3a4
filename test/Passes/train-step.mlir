// RUN: tfc-opt %s -split-input-file -tfc-autodiff -tfc-train-step -verify-diagnostics | FileCheck %s
// RUN: tfc-opt %s -split-input-file -tfc-autodiff -tfc-train-step="optimizer=sgd" -verify-diagnostics | FileCheck %s --check-prefix=SGD
// RUN: tfc-opt %s -split-input-file -tfc-autodiff -tfc-train-step -canonicalize | FileCheck %s --check-prefix=DECAY
// RUN: tfc-opt %s -split-input-file -tfc-autodiff -tfc-train-step="no-decay=w" -canonicalize | FileCheck %s --check-prefix=NODECAY

// Tests that train_step takes the loss inputs and the hyper-parameters,
// keeps AdamW moments and the step counter as state, and writes back the
// parameter, both moments and the counter.
// CHECK-DAG: tfc.state @train.step : tensor<i64> = "zeros"
// CHECK-DAG: tfc.state @opt.m.w : tensor<4x4xf32> = "zeros"
// CHECK-DAG: tfc.state @opt.v.w : tensor<4x4xf32> = "zeros"
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: {tfc.name = "lr"}
// CHECK-SAME: {tfc.name = "beta1"}
// CHECK-SAME: -> (tensor<f32> {tfc.name = "loss"}, tensor<f32> {tfc.name = "lr"}, tensor<f32> {tfc.name = "grad_norm"})
// CHECK: tfc.store %{{.*}}, @train.step : tensor<i64>
// CHECK: tfc.pow
// CHECK-DAG: tfc.store %{{.*}}, @opt.m.w
// CHECK-DAG: tfc.store %{{.*}}, @opt.v.w
// CHECK-DAG: tfc.store %{{.*}}, @w
// Tests the weight-decay mask: the matrix @w decays by default (p * (1 - lr
// wd) reads the weight_decay argument), not when excluded by name.
// DECAY-LABEL: func.func @train_step
// DECAY-SAME: %[[WD:[a-z0-9]+]]: tensor<f32> {tfc.name = "weight_decay"}
// DECAY: tfc.mul %{{.*}}, %[[WD]]
// NODECAY-LABEL: func.func @train_step
// NODECAY-SAME: %[[WD:[a-z0-9]+]]: tensor<f32> {tfc.name = "weight_decay"}
// NODECAY-NOT: %[[WD]]
// NODECAY: return
// SGD: tfc.state @opt.buf.w : tensor<4x4xf32> = "zeros"
// SGD-LABEL: func.func @train_step
// SGD-SAME: {tfc.name = "momentum"}
// SGD: tfc.store %{{.*}}, @opt.buf.w
tfc.param @w : tensor<4x4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4x4xf32>
  %y = tfc.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %l = tfc.reduce_mean %y dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
