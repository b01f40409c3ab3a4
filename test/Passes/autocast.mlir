// RUN: tfc-opt %s -split-input-file -tfc-autocast -verify-diagnostics | FileCheck %s
// RUN: tfc-opt %s -split-input-file -tfc-autocast="precision=f16 init-scale=1024" -verify-diagnostics | FileCheck %s --check-prefix=F16
// RUN: tfc-opt %s -split-input-file -tfc-autocast="precision=f16" -tfc-autodiff -tfc-train-step="optimizer=adamw" -verify-diagnostics | FileCheck %s --check-prefix=SCALED

// Tests that the loss entry's linear and attention take bf16 operands and give
// f32 back, while the parameters, the norm, the embedding, the residual add,
// the loss and other entries stay f32; no loss scale for bf16.
// CHECK-NOT:   amp.loss_scale
// CHECK:       tfc.param @w : tensor<8x8xf32>
// CHECK-LABEL: func.func @loss(
// CHECK:         %[[W:.*]] = tfc.load @w : tensor<8x8xf32>
// CHECK:         %[[N:.*]] = tfc.layer_norm {{.*}} -> tensor<2x4x8xf32>
// CHECK:         %[[NB:.*]] = tfc.cast %[[N]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK:         %[[WB:.*]] = tfc.cast %[[W]] : tensor<8x8xf32> -> tensor<8x8xbf16>
// CHECK:         %[[Y:.*]] = tfc.linear %[[NB]], %[[WB]] : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK:         %[[YF:.*]] = tfc.cast %[[Y]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK:         tfc.reshape %[[YF]] : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
// CHECK-COUNT-3: tfc.cast {{.*}} : tensor<2x2x4x4xf32> -> tensor<2x2x4x4xbf16>
// CHECK:         %[[A:.*]] = tfc.attention {{.*}} -> tensor<2x2x4x4xbf16>
// CHECK:         %[[AF:.*]] = tfc.cast %[[A]] : tensor<2x2x4x4xbf16> -> tensor<2x2x4x4xf32>
// CHECK:         tfc.add {{.*}} -> tensor<2x4x8xf32>
// CHECK:         tfc.cross_entropy {{.*}} : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
// CHECK-LABEL: func.func @forward(
// CHECK-NOT:     bf16
// CHECK:         return
// F16:         tfc.state @amp.loss_scale : tensor<f32> = "constant(1024)"
// F16-NEXT:    tfc.state @amp.good_steps : tensor<f32> = "zeros"
// F16:         tfc.linear {{.*}} -> tensor<2x4x8xf16>
// SCALED-LABEL: func.func @loss_grad(
// SCALED:         %[[S:.*]] = tfc.load @amp.loss_scale : tensor<f32>
// SCALED:         tfc.div %{{.*}}, %[[S]] : tensor<8x8xf32>, tensor<f32> -> tensor<8x8xf32>
// SCALED-LABEL: func.func @train_step(
// SCALED-SAME:    -> (tensor<f32> {tfc.name = "loss"}, tensor<f32> {tfc.name = "lr"}, tensor<f32> {tfc.name = "grad_norm"}, tensor<f32> {tfc.name = "loss_scale"}, tensor<f32> {tfc.name = "next_loss_scale"}, tensor<f32> {tfc.name = "overflow"})
// SCALED:         tfc.dynamic_slice {{.*}} dim = 0 : (tensor<2x8x8xf32>, tensor<i32>) -> tensor<1x8x8xf32>
// SCALED:         tfc.store {{.*}}, @amp.loss_scale
// SCALED:         tfc.store {{.*}}, @amp.good_steps
tfc.param @w : tensor<8x8xf32> = "normal(0.0, 0.02)"
tfc.param @emb : tensor<8x8xf32> = "normal(0.0, 0.02)"
tfc.param @g : tensor<8xf32> = "ones"
func.func @loss(%tok: tensor<2x4xi32>, %t: tensor<2x4xi32>) -> tensor<f32> {
  %e = tfc.load @emb : tensor<8x8xf32>
  %h = tfc.embedding %e, %tok : tensor<8x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %w = tfc.load @w : tensor<8x8xf32>
  %g = tfc.load @g : tensor<8xf32>
  %n = tfc.layer_norm %h weight %g eps = 1.0e-5 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %y = tfc.linear %n, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %r = tfc.reshape %y : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %q = tfc.transpose %r perm = [0, 2, 1, 3] : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %a = tfc.attention %q, %q, %q causal : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %b = tfc.transpose %a perm = [0, 2, 1, 3] : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %c = tfc.reshape %b : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %s = tfc.add %h, %c : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %l = tfc.cross_entropy %s, %t ignore_index = -100 : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %l : tensor<f32>
}
func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %w = tfc.load @w : tensor<8x8xf32>
  %y = tfc.matmul %x, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Tests that a module without a loss entry is refused.
// expected-error @below {{tfc-autocast: no 'loss' or 'loss_train' entry to compute in mixed precision}}
module {
  func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    return %x : tensor<2x8xf32>
  }
}

// -----

// Tests that a loss entry already in 16 bits is refused, naming the op.
tfc.param @w : tensor<8x8xbf16> = "normal(0.0, 0.02)"
func.func @loss(%x: tensor<2x8xbf16>) -> tensor<f32> {
  %w = tfc.load @w : tensor<8x8xbf16>
  // expected-error @below {{tfc-autocast: expects f32 results (is the module already converted to 16 bits?)}}
  %y = tfc.matmul %x, %w : tensor<2x8xbf16>, tensor<8x8xbf16> -> tensor<2x8xbf16>
  %s = tfc.reduce_sum %y dims = [0, 1] : tensor<2x8xbf16> -> tensor<bf16>
  %l = tfc.cast %s : tensor<bf16> -> tensor<f32>
  return %l : tensor<f32>
}
