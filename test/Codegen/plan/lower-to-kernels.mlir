// RUN: tfc-opt %s --tfc-lower-to-kernels -split-input-file -verify-diagnostics | FileCheck %s

// Tests of tfc-lower-to-kernels, the target-neutral step: each kernel holds
// its op on tensors between the reads of its operand buffers and the writes
// into its result buffers; the module records its target; the planned
// program is refused as input.

// Tests that a kernel's body is the op on tensors, that identical ops share
// one kernel, that a reshape of an intermediate is a view, and that the CPU
// target lets pointwise kernels write over a dying operand.

// CHECK-LABEL: module attributes {tfc.target = "cpu"}
// CHECK-LABEL: func.func private @k0_exp(
// CHECK-SAME:      %[[A:.*]]: memref<2x6xf32>, %[[B:.*]]: memref<2x6xf32>) attributes {tfc.kernel, tfc.kernel_cost = array<i64: 96, 48, 48>, tfc.kernel_ops = "exp"}
// CHECK-NEXT:    %[[T:.*]] = bufferization.to_tensor %[[A]] restrict : memref<2x6xf32>
// CHECK-NEXT:    %[[E:.*]] = tfc.exp %[[T]] : tensor<2x6xf32>
// CHECK-NEXT:    bufferization.materialize_in_destination %[[E]] in restrict writable %[[B]]
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:      %[[X:.*]]: memref<2x6xf32> {tfc.input_index = 0 : i64, tfc.name = "x"}
// CHECK-SAME:      %[[OUT:.*]]: memref<3x4xf32> {tfc.name = "output0", tfc.output_index = 0 : i64}
// CHECK-SAME:      memref<0xi8> {tfc.arena}
// CHECK-SAME:      tfc.entry = "forward"
// CHECK-SAME:      tfc.num_kernels = 3 : i64
// CHECK:         %[[M0:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x6xf32>
// CHECK:         call @k0_exp(%[[X]], %[[M0]]) {tfc.in_place_ok}
// CHECK:         %[[M1:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x6xf32>
// CHECK:         call @k0_exp(%[[M0]], %[[M1]]) {tfc.in_place_ok}
// CHECK:         %[[F:.*]] = memref.collapse_shape %[[M1]]
// CHECK:         %[[V:.*]] = memref.expand_shape %[[F]]
// CHECK:         call @k1_abs(%[[V]], %[[OUT]]) {tfc.in_place_ok}
func.func @forward(%x: tensor<2x6xf32> {tfc.name = "x"}) -> tensor<3x4xf32> {
  %0 = tfc.exp %x : tensor<2x6xf32>
  %1 = tfc.exp %0 : tensor<2x6xf32>
  %2 = tfc.reshape %1 : tensor<2x6xf32> -> tensor<3x4xf32>
  %3 = tfc.abs %2 : tensor<3x4xf32>
  return %3 : tensor<3x4xf32>
}

// -----

// Tests that a KV cache read and stored back by one kv_cache_update is
// updated in place: the kernel takes (update, position, cache) and its body
// reads and writes the same cache buffer.

// CHECK-LABEL: func.func private @k0_kv_cache_update_write(
// CHECK-SAME:      %[[U:.*]]: memref<1x2x4xf32>, %[[P:.*]]: memref<i32>, %[[C:.*]]: memref<1x8x4xf32>)
// CHECK-DAG:     %[[TU:.*]] = bufferization.to_tensor %[[U]]
// CHECK-DAG:     %[[TP:.*]] = bufferization.to_tensor %[[P]]
// CHECK-DAG:     %[[TC:.*]] = bufferization.to_tensor %[[C]]
// CHECK:         %[[R:.*]] = tfc.kv_cache_update %[[TC]], %[[TU]], %[[TP]]
// CHECK:         bufferization.materialize_in_destination %[[R]] in restrict writable %[[C]]
// CHECK-LABEL: func.func @decode(
// CHECK-SAME:      %[[CACHE:.*]]: memref<1x8x4xf32> {tfc.state_index = 0 : i64}
// CHECK:         call @k0_kv_cache_update_write(%{{.*}}, %{{.*}}, %[[CACHE]])
// CHECK-NOT:     memref.copy
tfc.state @cache : tensor<1x8x4xf32> = "zeros"
func.func @decode(%u: tensor<1x2x4xf32>, %pos: tensor<i32>) -> tensor<1x2x4xf32> {
  %c = tfc.load @cache : tensor<1x8x4xf32>
  %n = tfc.kv_cache_update %c, %u, %pos dim = 1 : (tensor<1x8x4xf32>, tensor<1x2x4xf32>, tensor<i32>) -> tensor<1x8x4xf32>
  tfc.store %n, @cache : tensor<1x8x4xf32>
  %r = tfc.neg %u : tensor<1x2x4xf32>
  return %r : tensor<1x2x4xf32>
}

// -----

// Tests that serving's prefill_row pattern is in place too: the row is
// sliced out of the cache before the write that puts it back, so the cache
// (the state's storage) is never copied whole.

// CHECK-LABEL: func.func @prefill_row(
// CHECK-SAME:      %[[CACHE:.*]]: memref<4x8x2xf32> {tfc.state_index = 0 : i64}
// CHECK:         call @{{k[0-9]+}}_dynamic_slice(%[[CACHE]],
// CHECK:         call @{{k[0-9]+}}_kv_cache_update_write(%{{.*}}, %{{.*}}, %[[CACHE]])
// CHECK-NOT:     memref.copy
tfc.state @cache : tensor<4x8x2xf32> = "zeros"
func.func @prefill_row(%u: tensor<1x3x2xf32>, %row: tensor<i32>, %pos: tensor<i32>) -> tensor<1x8x2xf32> {
  %c = tfc.load @cache : tensor<4x8x2xf32>
  %mine = tfc.dynamic_slice %c[%row] dim = 0 : (tensor<4x8x2xf32>, tensor<i32>) -> tensor<1x8x2xf32>
  %new = tfc.kv_cache_update %mine, %u, %pos dim = 1 : (tensor<1x8x2xf32>, tensor<1x3x2xf32>, tensor<i32>) -> tensor<1x8x2xf32>
  %all = tfc.kv_cache_update %c, %new, %row dim = 0 : (tensor<4x8x2xf32>, tensor<1x8x2xf32>, tensor<i32>) -> tensor<4x8x2xf32>
  tfc.store %all, @cache : tensor<4x8x2xf32>
  return %new : tensor<1x8x2xf32>
}

// -----

// Tests that a cache also read after its update is copied, not updated in
// place (the later read must see the old values).

// CHECK-LABEL: func.func @read_after(
// CHECK:         memref.copy
tfc.state @cache : tensor<4x8x2xf32> = "zeros"
func.func @read_after(%u: tensor<4x1x2xf32>, %pos: tensor<i32>) -> tensor<4x8x2xf32> {
  %c = tfc.load @cache : tensor<4x8x2xf32>
  %all = tfc.kv_cache_update %c, %u, %pos dim = 1 : (tensor<4x8x2xf32>, tensor<4x1x2xf32>, tensor<i32>) -> tensor<4x8x2xf32>
  tfc.store %all, @cache : tensor<4x8x2xf32>
  %old = tfc.neg %c : tensor<4x8x2xf32>
  return %old : tensor<4x8x2xf32>
}

// -----

// Tests that the planned program is refused as input (tfc's own
// --compile-to=kernels output), with a message instead of a crash.

// expected-error @+1 {{@forward is already part of a planned program; this pass takes the graph}}
func.func @forward(%x: memref<4xf32> {tfc.input_index = 0 : i64}, %out: memref<4xf32> {tfc.output_index = 0 : i64}, %arena: memref<0xi8> {tfc.arena}) attributes {tfc.entry = "forward", tfc.arena_bytes = 0 : i64, tfc.num_kernels = 1 : i64} {
  return
}

// -----

// Tests that an entry on memrefs (not a graph) is refused with a message.

// expected-error @+1 {{entry @f takes 'memref<4xf32>'; entries take and return ranked tensors}}
func.func @f(%x: memref<4xf32>) {
  return
}

// -----

// Tests that a kernel reads its operands by position: `mul %x, %x` and
// `mul %x, %y` share one kernel, which must read both of its buffers.

// CHECK-LABEL: func.func private @k0_mul(
// CHECK-SAME:      %[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>, %[[C:.*]]: memref<4xf32>)
// CHECK-DAG:     %[[TA:.*]] = bufferization.to_tensor %[[A]]
// CHECK-DAG:     %[[TB:.*]] = bufferization.to_tensor %[[B]]
// CHECK:         tfc.mul %[[TA]], %[[TB]]
// CHECK-LABEL: func.func @square_then_mul(
// CHECK:         call @k0_mul(%[[X:.*]], %[[X]], %{{.*}})
// CHECK:         call @k0_mul(%{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT:     call @k1_mul
func.func @square_then_mul(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tfc.mul %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = tfc.mul %0, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
