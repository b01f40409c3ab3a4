// RUN: tfc-opt %s -split-input-file -tfc-autodiff -tfc-microbatch="count=2" -verify-diagnostics

// Tests that an input without a batch dimension is refused.
tfc.param @w : tensor<4xf32> = "normal(0.0, 1.0)"
// expected-error @+1 {{tfc-microbatch: input 1 of 'loss_grad' is 'tensor<f32>', not a batch of rows}}
func.func @loss(%x: tensor<2x4xf32>, %s: tensor<f32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %z = tfc.mul %y, %s : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %l = tfc.reduce_mean %z dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that inputs of different batch sizes are refused.
tfc.param @w : tensor<4xf32> = "normal(0.0, 1.0)"
// expected-error @+1 {{tfc-microbatch: the inputs of 'loss_grad' disagree on the batch: 2 and 3 rows}}
func.func @loss(%x: tensor<2x4xf32>, %s: tensor<3x4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %l = tfc.reduce_mean %y dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  %k = tfc.reduce_mean %s dims = [0, 1] : tensor<3x4xf32> -> tensor<f32>
  %r = tfc.add %l, %k : tensor<f32>, tensor<f32> -> tensor<f32>
  return %r : tensor<f32>
}
