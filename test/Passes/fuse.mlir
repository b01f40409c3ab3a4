// RUN: tfc-opt %s -split-input-file -tfc-fuse | FileCheck %s
// RUN: tfc-opt %s -split-input-file -tfc-fuse=print=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT
// RUN: tfc-opt %s -split-input-file -tfc-fuse=max-inputs=2 | FileCheck %s --check-prefix=INPUTS

// Tests that a pointwise chain with a broadcast operand and a splat constant
// becomes one kernel: the constant is copied inside, %t and %u never reach
// memory: 6404 bytes moved become 2304 (x and the bias in, y out).
// CHECK-LABEL: func.func @chain
// CHECK-SAME: tfc.fusion = {attention = 0 : i64, bytes_after = 2304 : i64, bytes_before = 6404 : i64, groups = 1 : i64, kernels_after = 1 : i64, kernels_before = 3 : i64}
// CHECK-NEXT: %[[F:.*]] = tfc.fused "pointwise"(%arg0, %arg1) : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x64xf32>, %[[B:.*]]: tensor<64xf32>):
// CHECK-NEXT: %[[T:.*]] = tfc.add %[[X]], %[[B]]
// CHECK-NEXT: %[[U:.*]] = tfc.gelu %[[T]]
// CHECK-NEXT: %[[C:.*]] = tfc.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[Y:.*]] = tfc.mul %[[U]], %[[C]]
// CHECK-NEXT: tfc.yield %[[Y]] : tensor<4x64xf32>
// CHECK: return %[[F]]
// PRINT: tfc-fuse: @chain: pointwise kernel of 3 ops (add gelu mul), 2 in, 1 out: 6404 -> 2304 bytes
// PRINT: tfc-fuse: @chain: 3 -> 1 kernels, 1 fused, 0 attention, 6404 -> 2304 bytes moved
func.func @chain(%x: tensor<4x64xf32>, %b: tensor<64xf32>) -> tensor<4x64xf32> {
  %c = tfc.constant dense<0.5> : tensor<f32>
  %t = tfc.add %x, %b : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>
  %u = tfc.gelu %t approximate = tanh : tensor<4x64xf32>
  %y = tfc.mul %u, %c : tensor<4x64xf32>, tensor<f32> -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests multi-output fusion: two chains that meet (AdamW's m and p) are one
// kernel; %m1 is read outside, so it is a result, %r stays inside.
// CHECK-LABEL: func.func @two_outputs
// CHECK: %[[F:.*]]:2 = tfc.fused "pointwise"(%arg0, %arg1, %arg3, %arg2)
// CHECK: %[[M1:.*]] = tfc.add
// CHECK: %[[P1:.*]] = tfc.sub
// CHECK-NEXT: tfc.yield %[[M1]], %[[P1]]
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @two_outputs(%m: tensor<16xf32>, %g: tensor<16xf32>, %p: tensor<16xf32>, %lr: tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %m1 = tfc.add %m, %g : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  %r = tfc.mul %m1, %lr : tensor<16xf32>, tensor<f32> -> tensor<16xf32>
  %p1 = tfc.sub %p, %r : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %m1, %p1 : tensor<16xf32>, tensor<16xf32>
}

// -----

// Tests that a reduction takes in the pointwise group that computes its
// input (the sum of squares of the gradient norm): one pass, no g*g buffer.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK: %[[F:.*]] = tfc.fused "reduction"(%arg0) : (tensor<8x32xf32>) -> tensor<f32>
// CHECK: %[[Q:.*]] = tfc.mul
// CHECK-NEXT: %[[S:.*]] = tfc.reduce_sum %[[Q]] dims = [0, 1]
// CHECK-NEXT: tfc.yield %[[S]] : tensor<f32>
// CHECK: tfc.sqrt %[[F]]
func.func @sum_of_squares(%g: tensor<8x32xf32>) -> tensor<f32> {
  %q = tfc.mul %g, %g : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  %s = tfc.reduce_sum %q dims = [0, 1] : tensor<8x32xf32> -> tensor<f32>
  %n = tfc.sqrt %s : tensor<f32>
  return %n : tensor<f32>
}

// -----

// Tests that a reduction does not take a group whose value is also read
// elsewhere (the fused loop would not write it); the group stays pointwise.
// CHECK-LABEL: func.func @shared_prologue
// CHECK: %[[E:.*]] = tfc.fused "pointwise"
// CHECK: tfc.reduce_sum %[[E]]
// CHECK-NOT: tfc.fused "reduction"
func.func @shared_prologue(%x: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8xf32>) {
  %a = tfc.neg %x : tensor<8x32xf32>
  %e = tfc.exp %a : tensor<8x32xf32>
  %s = tfc.reduce_sum %e dims = [1] : tensor<8x32xf32> -> tensor<8xf32>
  return %e, %s : tensor<8x32xf32>, tensor<8xf32>
}

// -----

// Tests that ops over different shapes are not fused (the iteration space
// would differ), and that a value read by a non-fusible op before the
// consumer keeps the consumer out (the group would have to run both before
// and after the softmax, which is over the rows here, not a row kernel: a
// cycle).
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: tfc.fused
// CHECK: tfc.exp
// CHECK: tfc.softmax
// CHECK: tfc.add
// CHECK: tfc.reduce_sum
// CHECK: tfc.mul
func.func @not_fused(%x: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8xf32>) {
  %e = tfc.exp %x : tensor<8x32xf32>
  %s = tfc.softmax %e dim = 0 : tensor<8x32xf32> -> tensor<8x32xf32>
  %y = tfc.add %e, %s : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  %r = tfc.reduce_sum %x dims = [1] : tensor<8x32xf32> -> tensor<8xf32>
  %z = tfc.mul %r, %r : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %y, %z : tensor<8x32xf32>, tensor<8xf32>
}

// -----

// Tests the input limit: with max-inputs=2 the third distinct buffer starts
// a new kernel.
// INPUTS-LABEL: func.func @inputs
// INPUTS: %[[A:.*]] = tfc.fused "pointwise"(%arg0, %arg1)
// INPUTS: %[[Z:.*]] = tfc.add %[[A]], %arg2
// INPUTS-NEXT: return %[[Z]]
func.func @inputs(%a: tensor<16xf32>, %b: tensor<16xf32>, %c: tensor<16xf32>) -> tensor<16xf32> {
  %x = tfc.mul %a, %b : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  %y = tfc.exp %x : tensor<16xf32>
  %z = tfc.add %y, %c : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %z : tensor<16xf32>
}

// -----

// Tests that the unfused attention sequence (scores, scale, causal mask,
// softmax, weighted values) becomes one tfc.attention: FlashAttention, whose
// T x T scores never reach memory.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: attention = 1 : i64
// CHECK-NEXT: %[[O:.*]] = tfc.attention %arg0, %arg1, %arg2 causal scale = 2.500000e-01
// CHECK-NEXT: return %[[O]]
// PRINT: tfc-fuse: @attention: attention sequence -> tfc.attention
func.func @attention(%q: tensor<1x2x3x16xf32>, %k: tensor<1x2x3x16xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32> {
  %scale = tfc.constant dense<0.25> : tensor<f32>
  %mask = tfc.constant dense<[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %s = tfc.matmul %q, %k transpose_rhs : tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32> -> tensor<1x2x3x3xf32>
  %t = tfc.mul %s, %scale : tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %u = tfc.add %t, %mask : tensor<1x2x3x3xf32>, tensor<3x3xf32> -> tensor<1x2x3x3xf32>
  %p = tfc.softmax %u dim = 3 : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %o = tfc.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x8xf32> -> tensor<1x2x3x8xf32>
  return %o : tensor<1x2x3x8xf32>
}

// -----

// Tests that a mask that is not causal (here it hides the diagonal) or
// scores read elsewhere keep the sequence as it is.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: tfc.attention
// CHECK: tfc.softmax
func.func @not_attention(%q: tensor<1x1x2x4xf32>, %k: tensor<1x1x2x4xf32>, %v: tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32> {
  %mask = tfc.constant dense<[[0xFF800000, 0xFF800000], [0.0, 0xFF800000]]> : tensor<2x2xf32>
  %s = tfc.matmul %q, %k transpose_rhs : tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32> -> tensor<1x1x2x2xf32>
  %u = tfc.add %s, %mask : tensor<1x1x2x2xf32>, tensor<2x2xf32> -> tensor<1x1x2x2xf32>
  %p = tfc.softmax %u dim = 3 : tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  %o = tfc.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32> -> tensor<1x1x2x4xf32>
  return %o : tensor<1x1x2x4xf32>
}

// -----

// Tests matmul epilogue fusion: a linear whose only reader is a gelu (tanh),
// whose only reader is a residual add, is one kernel; the library applies
// the activation and the residual to each output tile in cache.
// CHECK-LABEL: func.func @linear_epilogue
// CHECK: %[[F:.*]] = tfc.fused "linear"(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tfc.linear
// CHECK-NEXT: tfc.gelu
// CHECK-NEXT: tfc.add
// CHECK-NEXT: tfc.yield
// CHECK: return %[[F]]
func.func @linear_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %l = tfc.linear %x, %w bias %b : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %g = tfc.gelu %l approximate = tanh : tensor<4x16xf32>
  %y = tfc.add %g, %r : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests that leaky_relu is a linear epilogue too (the encoder-decoder's
// feed-forward), with a residual add after it.
// CHECK-LABEL: func.func @linear_leaky_relu
// CHECK: %[[F:.*]] = tfc.fused "linear"(%arg0, %arg1, %arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tfc.linear
// CHECK-NEXT: tfc.leaky_relu %{{.*}} alpha = 2.000000e-01
// CHECK-NEXT: tfc.add
// CHECK-NEXT: tfc.yield
// CHECK: return %[[F]]
func.func @linear_leaky_relu(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %l = tfc.linear %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = tfc.leaky_relu %l alpha = 2.000000e-01 : tensor<4x16xf32>
  %y = tfc.add %a, %r : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests that a linear whose result is also read elsewhere (the backward
// needs gelu's input) keeps its activation apart; the exact (erf) gelu is
// not a library epilogue either.
// CHECK-LABEL: func.func @linear_kept
// CHECK-NOT: tfc.fused "linear"
// CHECK: tfc.linear
// CHECK: tfc.gelu %{{.*}} approximate = tanh
// CHECK-LABEL: func.func @linear_exact_gelu
// CHECK-NOT: tfc.fused "linear"
func.func @linear_kept(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %l = tfc.linear %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %g = tfc.gelu %l approximate = tanh : tensor<4x16xf32>
  return %l, %g : tensor<4x16xf32>, tensor<4x16xf32>
}
func.func @linear_exact_gelu(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %l = tfc.linear %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %g = tfc.gelu %l approximate = none : tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}

// -----

// Tests that a linear returned directly (its only user is not an op with a
// result) stays as it is.
// CHECK-LABEL: func.func @linear_returned
// CHECK-NEXT: %[[L:.*]] = tfc.linear
// CHECK-NEXT: return %[[L]]
func.func @linear_returned(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %l = tfc.linear %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %l : tensor<4x16xf32>
}

// -----

// Tests that the add of two linears' results (gradients meeting in the
// backward) is the epilogue of the first linear only.
// CHECK-LABEL: func.func @two_linears
// CHECK: %[[B:.*]] = tfc.linear %arg2, %arg3
// CHECK: %[[F:.*]] = tfc.fused "linear"(%arg0, %arg1, %[[B]])
// CHECK: return %[[F]]
func.func @two_linears(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %y: tensor<4x8xf32>, %v: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %a = tfc.linear %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %b = tfc.linear %y, %v : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = tfc.add %a, %b : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

// Tests a mask written at the scores' full shape, as the first operand of
// the add, and no scale (1.0).
// CHECK-LABEL: func.func @attention_full_mask
// CHECK-NEXT: %[[O:.*]] = tfc.attention %arg0, %arg1, %arg2 causal scale = 1.000000e+00
// CHECK-NEXT: return %[[O]]
func.func @attention_full_mask(%q: tensor<1x1x2x4xf32>, %k: tensor<1x1x2x4xf32>, %v: tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32> {
  %mask = tfc.constant dense<[[[[0.0, 0xFF800000], [0.0, 0.0]]]]> : tensor<1x1x2x2xf32>
  %s = tfc.matmul %q, %k transpose_rhs : tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32> -> tensor<1x1x2x2xf32>
  %u = tfc.add %mask, %s : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  %p = tfc.softmax %u dim = -1 : tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  %o = tfc.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32> -> tensor<1x1x2x4xf32>
  return %o : tensor<1x1x2x4xf32>
}

// -----

// Tests a row kernel: the residual add before a layer_norm is its prologue;
// the sum is also read afterwards (the residual stream), so it is a second
// result.
// CHECK-LABEL: func.func @residual_norm
// CHECK: %[[F:.*]]:2 = tfc.fused "row"(%arg0, %arg1, %arg2, %arg3)
// CHECK: %[[S:.*]] = tfc.add
// CHECK-NEXT: %[[N:.*]] = tfc.layer_norm %[[S]]
// CHECK-NEXT: tfc.yield %[[S]], %[[N]]
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @residual_norm(%x: tensor<4x64xf32>, %r: tensor<4x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %s = tfc.add %x, %r : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %n = tfc.layer_norm %s weight %w bias %b eps = 1.0e-5 : (tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return %s, %n : tensor<4x64xf32>, tensor<4x64xf32>
}

// -----

// Tests that a softmax over another dimension than the last, and a prologue
// operand broadcast along the rows (not along the row), are not row kernels.
// CHECK-LABEL: func.func @not_row
// CHECK-NOT: tfc.fused "row"
// CHECK: tfc.softmax
// CHECK: tfc.layer_norm
func.func @not_row(%x: tensor<4x64xf32>, %c: tensor<4x1xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %e = tfc.exp %x : tensor<4x64xf32>
  %s = tfc.softmax %e dim = 0 : tensor<4x64xf32> -> tensor<4x64xf32>
  %m = tfc.mul %x, %c : tensor<4x64xf32>, tensor<4x1xf32> -> tensor<4x64xf32>
  %n = tfc.layer_norm %m eps = 1.0e-5 : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %s, %n : tensor<4x64xf32>, tensor<4x64xf32>
}
