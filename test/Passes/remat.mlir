// RUN: tfc-opt %s -split-input-file -tfc-remat | FileCheck %s
// RUN: tfc-opt %s -split-input-file -tfc-remat=memory-budget=1 | FileCheck %s --check-prefix=BUDGET
// RUN: tfc-opt %s -split-input-file -tfc-remat=memory-budget=200 | FileCheck %s --check-prefix=ORDER
// RUN: tfc-opt %s -split-input-file -tfc-remat=recompute-matmuls=true | FileCheck %s --check-prefix=ALL
// RUN: tfc-opt %s -split-input-file -tfc-remat=print=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT

// Tests the textbook cut: x -> linear -> gelu -> linear -> loss, where the
// backward reads the gelu's input (its VJP) and its output (the second
// weight's gradient). Only the linear's output %h is saved (256 bytes, not
// 512); the gelu is cloned just before the backward's first reader of it,
// and the forward keeps its own gelu.
// CHECK-LABEL: func.func @gelu_grad
// CHECK-SAME: tfc.remat = {forward_flops = {{[0-9]+}} : i64, memory_budget = 0 : i64, recomputed_flops = {{[1-9][0-9]*}} : i64, recomputed_ops = 1 : i64, saved_bytes = 256 : i64, saved_bytes_before = 512 : i64, total_flops = {{[0-9]+}} : i64}
// CHECK: %[[H:.*]] = tfc.linear %arg0
// CHECK: %[[G:.*]] = tfc.gelu %[[H]]
// CHECK: tfc.linear %[[G]]
// CHECK: %[[L:.*]] = tfc.reduce_sum
// CHECK: %[[DY:.*]] = tfc.constant
// CHECK-NEXT: %[[G2:.*]] = tfc.gelu %[[H]]
// CHECK-NEXT: tfc.matmul %[[G2]], %[[DY]] transpose_lhs
// CHECK: tfc.tanh %[[H]]
// CHECK: return %[[L]]
// PRINT: tfc-remat @gelu_grad: saved_bytes_before=512 saved_bytes=256 recomputed_ops=1
// PRINT-NEXT: save tfc.linear tensor<4x16xf32> bytes=256
// PRINT-NEXT: recompute tfc.gelu tensor<4x16xf32> flops=
tfc.param @w1 : tensor<8x16xf32> = "normal(0.0, 0.02)"
tfc.param @w2 : tensor<16x8xf32> = "normal(0.0, 0.02)"
func.func @gelu_grad(%x: tensor<4x8xf32>) -> (tensor<f32>, tensor<16x8xf32>, tensor<8x16xf32>) {
  %w1 = tfc.load @w1 : tensor<8x16xf32>
  %w2 = tfc.load @w2 : tensor<16x8xf32>
  %h = tfc.linear %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %g = tfc.gelu %h approximate = tanh : tensor<4x16xf32>
  %y = tfc.linear %g, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %l = tfc.reduce_sum %y dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %dy = tfc.constant dense<1.0> : tensor<4x8xf32>
  %dw2 = tfc.matmul %g, %dy transpose_lhs : tensor<4x16xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
  %dg = tfc.linear %dy, %w2 transpose_weight : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %t = tfc.tanh %h : tensor<4x16xf32>
  %dh = tfc.mul %dg, %t : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %dw1 = tfc.matmul %x, %dh transpose_lhs : tensor<4x8xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  return %l, %dw2, %dw1 : tensor<f32>, tensor<16x8xf32>, tensor<8x16xf32>
}

// -----

// Tests that a chain of cheap pointwise ops reading one big value is
// recomputed from it: the backward reads %a, %b and %c, but only the
// linear's output %h is saved (1 KiB instead of 3 KiB). The clones come in
// program order, clones reading clones, all before the first backward op
// that needs them; train_step is an entry with a backward too.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: recomputed_ops = 3 : i64, saved_bytes = 1024 : i64, saved_bytes_before = 3072 : i64
// CHECK: %[[H:.*]] = tfc.linear
// CHECK: %[[L:.*]] = tfc.reduce_sum
// CHECK-NEXT: %[[A:.*]] = tfc.exp %[[H]]
// CHECK-NEXT: %[[B:.*]] = tfc.mul %[[A]], %[[H]]
// CHECK-NEXT: %[[C:.*]] = tfc.add %[[B]], %[[A]]
// CHECK-NEXT: tfc.mul %[[C]], %[[B]]
// CHECK: tfc.mul %{{.*}}, %[[A]]
tfc.param @w : tensor<8x64xf32> = "normal(0.0, 0.02)"
func.func @train_step(%x: tensor<4x8xf32>) -> (tensor<f32>, tensor<f32>) {
  %w = tfc.load @w : tensor<8x64xf32>
  %h = tfc.linear %x, %w : (tensor<4x8xf32>, tensor<8x64xf32>) -> tensor<4x64xf32>
  %a = tfc.exp %h : tensor<4x64xf32>
  %b = tfc.mul %a, %h : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %c = tfc.add %b, %a : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %l = tfc.reduce_sum %c dims = [0, 1] : tensor<4x64xf32> -> tensor<f32>
  %d = tfc.mul %c, %b : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %e = tfc.mul %d, %a : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %s = tfc.reduce_sum %e dims = [0, 1] : tensor<4x64xf32> -> tensor<f32>
  return %l, %s : tensor<f32>, tensor<f32>
}

// -----

// Tests that a matmul's output is saved, never recomputed, by default, even
// though its inputs are free (an input and a parameter); with a memory
// budget it cannot meet otherwise, the matmul is recomputed too and nothing
// is saved.
// CHECK-LABEL: func.func @matmul_grad
// CHECK-SAME: recomputed_flops = 0 : i64, recomputed_ops = 0 : i64, saved_bytes = 1024 : i64, saved_bytes_before = 1024 : i64
// CHECK: %[[M:.*]] = tfc.matmul
// CHECK: tfc.reduce_sum
// CHECK-NOT: tfc.matmul
// CHECK: tfc.reshape %[[M]]
// BUDGET-LABEL: func.func @matmul_grad
// BUDGET-SAME: memory_budget = 1 : i64, recomputed_flops = 32768 : i64, recomputed_ops = 1 : i64, saved_bytes = 0 : i64, saved_bytes_before = 1024 : i64
// BUDGET: %[[M:.*]] = tfc.matmul %arg0, %[[W:.*]] :
// BUDGET: tfc.reduce_sum
// BUDGET: %[[M2:.*]] = tfc.matmul %arg0, %[[W]] :
// BUDGET-NEXT: tfc.reshape %[[M2]]
// ALL-LABEL: func.func @matmul_grad
// ALL-SAME: saved_bytes = 0 : i64
tfc.param @w : tensor<64x64xf32> = "normal(0.0, 0.02)"
func.func @matmul_grad(%x: tensor<4x64xf32>) -> (tensor<f32>, tensor<256xf32>) {
  %w = tfc.load @w : tensor<64x64xf32>
  %m = tfc.matmul %x, %w : tensor<4x64xf32>, tensor<64x64xf32> -> tensor<4x64xf32>
  %l = tfc.reduce_sum %m dims = [0, 1] : tensor<4x64xf32> -> tensor<f32>
  %r = tfc.reshape %m : tensor<4x64xf32> -> tensor<256xf32>
  return %l, %r : tensor<f32>, tensor<256xf32>
}

// -----

// Tests the order in which a budget lets matmuls be recomputed: the most
// bytes saved per FLOP first. %m1 (1 KiB for 4096 FLOPs) goes before %m2
// (128 bytes for the same FLOPs); once the 200-byte budget is met, %m2
// stays saved.
// CHECK-LABEL: func.func @order_grad
// CHECK-SAME: recomputed_ops = 0 : i64, saved_bytes = 1152 : i64, saved_bytes_before = 1152 : i64
// ORDER-LABEL: func.func @order_grad
// ORDER-SAME: memory_budget = 200 : i64, recomputed_flops = 4096 : i64, recomputed_ops = 1 : i64, saved_bytes = 128 : i64, saved_bytes_before = 1152 : i64
// ORDER: %[[M1:.*]] = tfc.matmul %arg0
// ORDER: %[[M2:.*]] = tfc.matmul %arg1
// ORDER: tfc.add
// ORDER-NEXT: %[[M1B:.*]] = tfc.matmul %arg0
// ORDER-NEXT: tfc.reshape %[[M1B]]
// ORDER-NEXT: tfc.reshape %[[M2]]
tfc.param @w1 : tensor<8x64xf32> = "normal(0.0, 0.02)"
tfc.param @w2 : tensor<64x8xf32> = "normal(0.0, 0.02)"
func.func @order_grad(%x1: tensor<4x8xf32>, %x2: tensor<4x64xf32>) -> (tensor<f32>, tensor<256xf32>, tensor<32xf32>) {
  %w1 = tfc.load @w1 : tensor<8x64xf32>
  %w2 = tfc.load @w2 : tensor<64x8xf32>
  %m1 = tfc.matmul %x1, %w1 : tensor<4x8xf32>, tensor<8x64xf32> -> tensor<4x64xf32>
  %m2 = tfc.matmul %x2, %w2 : tensor<4x64xf32>, tensor<64x8xf32> -> tensor<4x8xf32>
  %s1 = tfc.reduce_sum %m1 dims = [0, 1] : tensor<4x64xf32> -> tensor<f32>
  %s2 = tfc.reduce_sum %m2 dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %l = tfc.add %s1, %s2 : tensor<f32>, tensor<f32> -> tensor<f32>
  %r1 = tfc.reshape %m1 : tensor<4x64xf32> -> tensor<256xf32>
  %r2 = tfc.reshape %m2 : tensor<4x8xf32> -> tensor<32xf32>
  return %l, %r1, %r2 : tensor<f32>, tensor<256xf32>, tensor<32xf32>
}

// -----

// Tests that a reshape is a view: the backward reads %h and a reshape of
// it, the bytes of %h count once, and the cut falls on %h, never on the
// reshape (which is cloned into the backward for free).
// CHECK-LABEL: func.func @view_grad
// CHECK-SAME: recomputed_ops = 1 : i64, saved_bytes = 256 : i64, saved_bytes_before = 256 : i64
// CHECK: %[[H:.*]] = tfc.linear
// CHECK: tfc.reduce_sum
// CHECK: tfc.exp %[[H]]
// CHECK-NEXT: %[[R:.*]] = tfc.reshape %[[H]]
// CHECK-NEXT: tfc.neg %[[R]]
tfc.param @w : tensor<8x16xf32> = "normal(0.0, 0.02)"
func.func @view_grad(%x: tensor<4x8xf32>) -> (tensor<f32>, tensor<4x16xf32>, tensor<64xf32>) {
  %w = tfc.load @w : tensor<8x16xf32>
  %h = tfc.linear %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = tfc.reshape %h : tensor<4x16xf32> -> tensor<64xf32>
  %e = tfc.exp %r : tensor<64xf32>
  %l = tfc.reduce_sum %e dims = [0] : tensor<64xf32> -> tensor<f32>
  %a = tfc.exp %h : tensor<4x16xf32>
  %n = tfc.neg %r : tensor<64xf32>
  return %l, %a, %n : tensor<f32>, tensor<4x16xf32>, tensor<64xf32>
}

// -----

// Tests that values that live anyway are neither saved nor recomputed: the
// backward reads only an input, a parameter, a constant and the returned
// loss. Entries without a backward (not train_step, not *_grad) are left
// alone.
// CHECK-LABEL: func.func @free_grad
// CHECK-SAME: recomputed_ops = 0 : i64, saved_bytes = 0 : i64, saved_bytes_before = 0 : i64
// CHECK-COUNT-1: tfc.exp
// CHECK-LABEL: func.func @loss(
// CHECK-NOT: tfc.remat
tfc.param @w : tensor<4xf32> = "normal(0.0, 0.02)"
func.func @free_grad(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %w = tfc.load @w : tensor<4xf32>
  %c = tfc.constant dense<2.0> : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = tfc.reduce_sum %y dims = [0] : tensor<4xf32> -> tensor<f32>
  %e = tfc.exp %x : tensor<4xf32>
  %g = tfc.mul %e, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %g2 = tfc.mul %g, %l : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %g3 = tfc.mul %g2, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %l, %g3 : tensor<f32>, tensor<4xf32>
}
func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4xf32>
  %y = tfc.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = tfc.reduce_sum %y dims = [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
