// An invalid module used by bad-input.test: K differs between the operands.
func.func @forward(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // The next line is line 4.
  %0 = tfc.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}
