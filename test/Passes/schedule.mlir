// RUN: tfc-opt %s -split-input-file -tfc-schedule | FileCheck %s
// RUN: tfc-opt %s -split-input-file -tfc-schedule=print=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT

// Tests the reordering of two independent branches: written interleaved,
// both 4 KiB exps are live at once (peak 8196 bytes); scheduled, each
// reduction runs as soon as it frees its exp (peak 4104: one exp and the two
// 4-byte sums, which are returned and live to the end).
// CHECK-LABEL: func.func @two_branches
// CHECK-SAME: tfc.schedule = {peak_bytes = 4104 : i64, peak_bytes_before = 8196 : i64}
// CHECK: %[[A:.*]] = tfc.exp %arg0
// CHECK-NEXT: %[[S:.*]] = tfc.reduce_sum %[[A]]
// CHECK-NEXT: %[[B:.*]] = tfc.exp %arg1
// CHECK-NEXT: %[[T:.*]] = tfc.reduce_sum %[[B]]
// CHECK-NEXT: return %[[S]], %[[T]]
// PRINT: tfc-schedule @two_branches: peak_bytes_before=8196 peak_bytes=4104
func.func @two_branches(%x: tensor<1024xf32>, %y: tensor<1024xf32>) -> (tensor<f32>, tensor<f32>) {
  %a = tfc.exp %x : tensor<1024xf32>
  %b = tfc.exp %y : tensor<1024xf32>
  %s = tfc.reduce_sum %a dims = [0] : tensor<1024xf32> -> tensor<f32>
  %t = tfc.reduce_sum %b dims = [0] : tensor<1024xf32> -> tensor<f32>
  return %s, %t : tensor<f32>, tensor<f32>
}

// -----

// Tests that an op is sunk to just before its first reader: the 4 KiB %a is
// not allocated while %b and its sum are computed. A reshape is a view: %r
// keeps %a's buffer live, it allocates nothing.
// CHECK-LABEL: func.func @sink
// CHECK-SAME: tfc.schedule = {peak_bytes = 4104 : i64, peak_bytes_before = 8196 : i64}
// CHECK: tfc.exp %arg1
// CHECK-NEXT: tfc.reduce_sum
// CHECK-NEXT: %[[A:.*]] = tfc.exp %arg0
// CHECK-NEXT: %[[R:.*]] = tfc.reshape %[[A]]
// CHECK-NEXT: tfc.reduce_sum %[[R]]
func.func @sink(%x: tensor<1024xf32>, %y: tensor<1024xf32>) -> (tensor<f32>, tensor<f32>) {
  %a = tfc.exp %x : tensor<1024xf32>
  %b = tfc.exp %y : tensor<1024xf32>
  %t = tfc.reduce_sum %b dims = [0] : tensor<1024xf32> -> tensor<f32>
  %r = tfc.reshape %a : tensor<1024xf32> -> tensor<32x32xf32>
  %s = tfc.reduce_sum %r dims = [0, 1] : tensor<32x32xf32> -> tensor<f32>
  return %s, %t : tensor<f32>, tensor<f32>
}

// -----

// Tests that loads and stores of a symbol keep their order, and that a read
// of a loaded value stays on its side of the next store of that symbol (a
// load may be a view of the state): once %new is computed, the matmul %dot
// would free the 4 KiB %big and the scheduler would run it at once, but it
// reads the old @s after the store in the original order, so it stays after
// the store; the second load stays after the store too.
// CHECK-LABEL: func.func @state
// CHECK: %[[OLD:.*]] = tfc.load @s
// CHECK: tfc.store %{{.*}}, @s :
// CHECK-NEXT: tfc.matmul %[[OLD]]
// CHECK-NEXT: tfc.load @s
tfc.state @s : tensor<1x1024xf32> = "zeros"
tfc.state @t : tensor<1x1024xf32> = "zeros"
func.func @state(%y: tensor<1x1024xf32>) -> tensor<1x1xf32> {
  %old = tfc.load @s : tensor<1x1024xf32>
  %big = tfc.exp %y : tensor<1x1024xf32>
  %new = tfc.add %old, %big : tensor<1x1024xf32>, tensor<1x1024xf32> -> tensor<1x1024xf32>
  tfc.store %new, @s : tensor<1x1024xf32>
  %dot = tfc.matmul %old, %big transpose_rhs : tensor<1x1024xf32>, tensor<1x1024xf32> -> tensor<1x1xf32>
  %again = tfc.load @s : tensor<1x1024xf32>
  %sum = tfc.add %again, %y : tensor<1x1024xf32>, tensor<1x1024xf32> -> tensor<1x1024xf32>
  tfc.store %sum, @t : tensor<1x1024xf32>
  return %dot : tensor<1x1xf32>
}
