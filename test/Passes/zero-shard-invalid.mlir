// RUN: tfc-opt %s -split-input-file -tfc-autodiff -tfc-zero-shard -verify-diagnostics

// Tests that tfc-zero-shard needs the all_reduce of tfc-data-parallel to turn
// into a reduce-scatter, and says so.
tfc.param @w : tensor<4xf32> = "normal(0.0, 1.0)"
// expected-error @+1 {{tfc-zero-shard: the gradient of 'w' (result 1 of 'loss_grad') is not a tfc.all_reduce mean; run tfc-data-parallel first, without buckets (bucket-mb=-1; tfc --dp=N --zero=1 does so)}}
func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = tfc.reduce_sum %y dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
