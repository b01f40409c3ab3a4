// RUN: tfc-opt %s -split-input-file -tfc-convert-precision -verify-diagnostics | FileCheck %s
// RUN: tfc-opt %s -split-input-file -tfc-convert-precision="precision=f16" -verify-diagnostics | FileCheck %s --check-prefix=F16

// Tests that parameters and state become bf16 and the entry computes in it:
// results re-inferred from the 16-bit operands, an f32 argument cast in, a
// scale constant cast to join a bf16 multiply, rotary's f32 frequencies kept,
// the KV store in bf16, and the f32 result cast back so the signature stays.
// CHECK:      tfc.param @w : tensor<8x8xbf16> = "normal(0.0, 0.02)"
// CHECK-NEXT: tfc.state @kv : tensor<1x1x4x8xbf16> = "zeros"
// CHECK-LABEL: func.func @decode(
// CHECK-SAME:  %[[X:.*]]: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
// CHECK:        %[[XB:.*]] = tfc.cast %[[X]] : tensor<1x1x4x8xf32> -> tensor<1x1x4x8xbf16>
// CHECK:        %[[W:.*]] = tfc.load @w : tensor<8x8xbf16>
// CHECK:        %[[Y:.*]] = tfc.matmul %[[XB]], %[[W]] : tensor<1x1x4x8xbf16>, tensor<8x8xbf16> -> tensor<1x1x4x8xbf16>
// CHECK:        %[[HB:.*]] = tfc.cast %{{.*}} : tensor<f32> -> tensor<bf16>
// CHECK:        %[[S:.*]] = tfc.mul %[[Y]], %[[HB]] : tensor<1x1x4x8xbf16>, tensor<bf16> -> tensor<1x1x4x8xbf16>
// CHECK:        %[[R:.*]] = tfc.rotary %[[S]] frequencies %{{.*}} theta = 1.000000e+04 : (tensor<1x1x4x8xbf16>, tensor<4xf32>) -> tensor<1x1x4x8xbf16>
// CHECK:        %[[G:.*]] = tfc.gelu %[[R]] approximate = tanh : tensor<1x1x4x8xbf16>
// CHECK:        tfc.store %[[G]], @kv : tensor<1x1x4x8xbf16>
// CHECK:        %[[OUT:.*]] = tfc.cast %[[G]] : tensor<1x1x4x8xbf16> -> tensor<1x1x4x8xf32>
// CHECK:        return %[[OUT]] : tensor<1x1x4x8xf32>
// F16:        tfc.param @w : tensor<8x8xf16>
// F16:        tfc.matmul {{.*}} -> tensor<1x1x4x8xf16>
tfc.param @w : tensor<8x8xf32> = "normal(0.0, 0.02)"
tfc.state @kv : tensor<1x1x4x8xf32> = "zeros"
func.func @decode(%x: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %w = tfc.load @w : tensor<8x8xf32>
  %y = tfc.matmul %x, %w : tensor<1x1x4x8xf32>, tensor<8x8xf32> -> tensor<1x1x4x8xf32>
  %half = tfc.constant dense<0.5> : tensor<f32>
  %s = tfc.mul %y, %half : tensor<1x1x4x8xf32>, tensor<f32> -> tensor<1x1x4x8xf32>
  %f = tfc.constant dense<[1.0, 0.5, 0.25, 0.125]> : tensor<4xf32>
  %r = tfc.rotary %s frequencies %f theta = 1.0e4 : (tensor<1x1x4x8xf32>, tensor<4xf32>) -> tensor<1x1x4x8xf32>
  %g = tfc.gelu %r approximate = tanh : tensor<1x1x4x8xf32>
  tfc.store %g, @kv : tensor<1x1x4x8xf32>
  return %g : tensor<1x1x4x8xf32>
}

// -----

// Tests that an entry using neither parameters nor state keeps f32, and that
// the loss is computed from f32 logits (as transformers upcasts them).
// CHECK-LABEL: func.func @sample
// CHECK:        tfc.sample %{{.*}} : (tensor<1x8xf32>,
// CHECK-LABEL: func.func @loss
// CHECK:        %[[L:.*]] = tfc.matmul {{.*}} -> tensor<2x8xbf16>
// CHECK:        %[[LF:.*]] = tfc.cast %[[L]] : tensor<2x8xbf16> -> tensor<2x8xf32>
// CHECK:        tfc.cross_entropy %[[LF]], %{{.*}} ignore_index = -100 : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
tfc.param @head : tensor<4x8xf32> = "normal(0.0, 0.02)"
func.func @sample(%logits: tensor<1x8xf32>, %t: tensor<f32>, %k: tensor<i32>, %p: tensor<f32>, %seed: tensor<i64>) -> tensor<1xi32> {
  %ids = tfc.sample %logits, %t, %k, %p, %seed : (tensor<1x8xf32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i64>) -> tensor<1xi32>
  return %ids : tensor<1xi32>
}
func.func @loss(%h: tensor<2x4xf32>, %targets: tensor<2xi32>) -> tensor<f32> {
  %w = tfc.load @head : tensor<4x8xf32>
  %logits = tfc.matmul %h, %w : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
  %loss = tfc.cross_entropy %logits, %targets ignore_index = -100 : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that training entries are refused.
tfc.param @w : tensor<4xf32> = "ones"
// expected-error @+1 {{tfc-convert-precision: 'loss_grad' is a training entry; 16-bit parameters are for generation artifacts (mixed-precision training keeps f32 master weights)}}
func.func @loss_grad(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32> {tfc.grad_of = "w"}) {
  %w = tfc.load @w : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = tfc.reduce_sum %y dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}
