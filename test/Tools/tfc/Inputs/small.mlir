tfc.param @"wte.weight" : tensor<16x8xf32> = "normal(0.0, 0.02)"
func.func @forward(%ids: tensor<2x4xi32>) -> tensor<2x4x8xf32> {
  %w = tfc.load @"wte.weight" : tensor<16x8xf32>
  %e = tfc.embedding %w, %ids : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  return %e : tensor<2x4x8xf32>
}
