// RUN: tfc-opt %s -tfc-data-parallel="size=2" -verify-diagnostics
// RUN: not tfc-opt %s -tfc-data-parallel="size=0" 2>&1 | FileCheck %s --check-prefix=SIZE

// Tests that a world of no rank is refused.
// SIZE: tfc-data-parallel: size 0 must be at least 1
// Tests that the pass needs the gradient entry (tfc --dp without --optimizer).
// expected-error @+1 {{tfc-data-parallel: no `*_grad` entry to average; run tfc-autodiff first (tfc --dp needs --optimizer)}}
module {
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}
}
