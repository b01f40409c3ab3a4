// Tests that tfc --dp is refused for CUDA artifacts with a message (the
// collectives are lowered for the CPU target only; NCCL is not built yet).
// REQUIRES: cuda-target
// RUN: not tfc %s -o /dev/null --target=cuda --optimizer=sgd --dp=2 2>&1 | FileCheck %s
// CHECK: tfc: error: --dp=2 with --target=cuda: collectives are lowered for the CPU target only so far (NCCL for CUDA artifacts is not built yet)

tfc.param @w : tensor<4x4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4x4xf32>
  %y = tfc.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %l = tfc.reduce_mean %y dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
