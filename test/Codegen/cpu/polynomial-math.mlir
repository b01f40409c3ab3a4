// RUN: tfc-opt %s --tfc-polynomial-math | FileCheck %s

// Tests that tanh and erf become arith (no libm call left for the loop
// vectorizer to stop at), scalars and vectors alike, and that other math ops
// stay for their LLVM intrinsics.
// CHECK-LABEL: func.func @approximated
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: arith.divf
// CHECK: math.exp
// CHECK: return
func.func @approximated(%x: f32, %v: vector<8xf32>) -> (f32, f32, vector<8xf32>, f32) {
  %t = math.tanh %x : f32
  %e = math.erf %x : f32
  %w = math.tanh %v : vector<8xf32>
  %x2 = math.exp %x : f32
  return %t, %e, %w, %x2 : f32, f32, vector<8xf32>, f32
}
