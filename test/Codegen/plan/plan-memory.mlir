// RUN: tfc-opt %s -split-input-file --tfc-plan-memory=print --tfc-verify-memory-plan | FileCheck %s

// Tests of tfc-plan-memory: live intervals, greedy placement by size, reuse
// after the last use, views keeping their buffer alive, in-place sharing at
// tfc.in_place_ok calls, and the three numbers recorded on the entry. The
// inputs are written as tfc-lower-to-kernels leaves them.

// Tests greedy placement by size and reuse after the last use: %a (256 B) is
// live at ops 1-3, %b (128 B) at 3-5, %c (256 B) at 5-6. The largest go first:
// %a at 0, %c at 0 (it starts after %a's last use), then %b at the lowest
// offset free of both, 256. The arena equals the live bound (384: %a + %b at
// @reduce); the intermediates add up to 640.

// CHECK: tfc-plan-memory: @reuse: arena 384 bytes, intermediates 640 bytes, live bound 384 bytes (arena / bound 1.000)
// CHECK-LABEL: func.func @reuse(
// CHECK-SAME:      %[[IN:.*]]: memref<16xf32> {{.*}}, %[[OUT:.*]]: memref<16xf32> {{.*}}, %[[ARENA:.*]]: memref<384xi8> {tfc.arena})
// CHECK-SAME:      tfc.arena_bytes = 384 : i64
// CHECK-SAME:      tfc.intermediate_bytes = 640 : i64
// CHECK-SAME:      tfc.live_bound_bytes = 384 : i64
// CHECK-NOT:     memref.alloc
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<384xi8> to memref<64xf32>
// CHECK-NEXT:    call @produce(%[[IN]], %[[A]])
// CHECK-NEXT:    %[[C256:.*]] = arith.constant 256 : index
// CHECK-NEXT:    %[[B:.*]] = memref.view %[[ARENA]][%[[C256]]][] : memref<384xi8> to memref<32xf32>
// CHECK-NEXT:    call @reduce(%[[A]], %[[B]])
// CHECK-NEXT:    %[[C0B:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C:.*]] = memref.view %[[ARENA]][%[[C0B]]][] : memref<384xi8> to memref<64xf32>
// CHECK-NEXT:    call @expand(%[[B]], %[[C]])
// CHECK-NEXT:    call @finish(%[[C]], %[[OUT]])
// CHECK-NEXT:    return
func.func private @produce(memref<16xf32>, memref<64xf32>)
func.func private @reduce(memref<64xf32>, memref<32xf32>)
func.func private @expand(memref<32xf32>, memref<64xf32>)
func.func private @finish(memref<64xf32>, memref<16xf32>)
func.func @reuse(%in: memref<16xf32> {tfc.input_index = 0 : i64}, %out: memref<16xf32> {tfc.output_index = 0 : i64}, %arena: memref<0xi8> {tfc.arena}) attributes {tfc.arena_bytes = 0 : i64, tfc.entry = "reuse"} {
  %a = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  call @produce(%in, %a) : (memref<16xf32>, memref<64xf32>) -> ()
  %b = memref.alloc() {alignment = 64 : i64} : memref<32xf32>
  call @reduce(%a, %b) : (memref<64xf32>, memref<32xf32>) -> ()
  %c = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  call @expand(%b, %c) : (memref<32xf32>, memref<64xf32>) -> ()
  call @finish(%c, %out) : (memref<64xf32>, memref<16xf32>) -> ()
  return
}

// -----

// Tests that a view of a buffer (a reshape) keeps it alive: %a's last direct
// use is @k1, but its view %v is read by @k3, so %c cannot take %a's bytes.
// Sizes are rounded up to 64 bytes (48 -> 64).

// CHECK: tfc-plan-memory: @alias: arena 192 bytes, intermediates 192 bytes, live bound 192 bytes
// CHECK-LABEL: func.func @alias(
// CHECK:         %[[A:.*]] = memref.view %{{.*}}[%c0{{.*}}][] : memref<192xi8> to memref<2x6xf32>
// CHECK:         %[[F:.*]] = memref.collapse_shape %[[A]]
// CHECK:         %[[V:.*]] = memref.expand_shape %[[F]]
// CHECK:         %[[B:.*]] = memref.view %{{.*}}[%c64{{.*}}][] : memref<192xi8> to memref<2x6xf32>
// CHECK:         %[[C:.*]] = memref.view %{{.*}}[%c128{{.*}}][] : memref<192xi8> to memref<2x6xf32>
// CHECK-NEXT:    call @k2(%[[B]], %[[C]])
// CHECK-NEXT:    call @k3(%[[V]], %[[C]], %{{.*}})
func.func private @k0(memref<2x6xf32>, memref<2x6xf32>)
func.func private @k1(memref<2x6xf32>, memref<2x6xf32>)
func.func private @k2(memref<2x6xf32>, memref<2x6xf32>)
func.func private @k3(memref<3x4xf32>, memref<2x6xf32>, memref<3x4xf32>)
func.func @alias(%in: memref<2x6xf32> {tfc.input_index = 0 : i64}, %out: memref<3x4xf32> {tfc.output_index = 0 : i64}, %arena: memref<0xi8> {tfc.arena}) attributes {tfc.arena_bytes = 0 : i64, tfc.entry = "alias"} {
  %a = memref.alloc() {alignment = 64 : i64} : memref<2x6xf32>
  call @k0(%in, %a) : (memref<2x6xf32>, memref<2x6xf32>) -> ()
  %f = memref.collapse_shape %a [[0, 1]] : memref<2x6xf32> into memref<12xf32>
  %v = memref.expand_shape %f [[0, 1]] output_shape [3, 4] : memref<12xf32> into memref<3x4xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<2x6xf32>
  call @k1(%a, %b) : (memref<2x6xf32>, memref<2x6xf32>) -> ()
  %c = memref.alloc() {alignment = 64 : i64} : memref<2x6xf32>
  call @k2(%b, %c) : (memref<2x6xf32>, memref<2x6xf32>) -> ()
  call @k3(%v, %c, %out) : (memref<3x4xf32>, memref<2x6xf32>, memref<3x4xf32>) -> ()
  return
}

// -----

// Tests in-place sharing: at a tfc.in_place_ok call a result takes the bytes
// of an operand of its shape that dies there (%b over %a, then %d over %b);
// not of one still live later (%c: %b is read by @k3_add), nor at a call
// without the mark (%e: @k4_softmax). The live bound counts a shared buffer
// once.

// CHECK: tfc-plan-memory: @in_place: arena 512 bytes, intermediates 1280 bytes, live bound 512 bytes
// CHECK-LABEL: func.func @in_place(
// CHECK:         %[[A:.*]] = memref.view %[[ARENA:.*]][%c0{{.*}}][]
// CHECK-NEXT:    call @k0_exp(%{{.*}}, %[[A]])
// CHECK:         %[[B:.*]] = memref.view %[[ARENA]][%c0{{.*}}][]
// CHECK-NEXT:    call @k1_neg(%[[A]], %[[B]])
// CHECK:         %[[C:.*]] = memref.view %[[ARENA]][%c256{{.*}}][]
// CHECK-NEXT:    call @k2_tanh(%[[B]], %[[C]])
// CHECK:         %[[D:.*]] = memref.view %[[ARENA]][%c0{{.*}}][]
// CHECK-NEXT:    call @k3_add(%[[B]], %[[C]], %[[D]])
// CHECK:         %[[E:.*]] = memref.view %[[ARENA]][%c256{{.*}}][]
// CHECK-NEXT:    call @k4_softmax(%[[D]], %[[E]])
func.func private @k0_exp(memref<4x16xf32>, memref<4x16xf32>)
func.func private @k1_neg(memref<4x16xf32>, memref<4x16xf32>)
func.func private @k2_tanh(memref<4x16xf32>, memref<4x16xf32>)
func.func private @k3_add(memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>)
func.func private @k4_softmax(memref<4x16xf32>, memref<4x16xf32>)
func.func private @k5_abs(memref<4x16xf32>, memref<4x16xf32>)
func.func @in_place(%in: memref<4x16xf32> {tfc.input_index = 0 : i64}, %out: memref<4x16xf32> {tfc.output_index = 0 : i64}, %arena: memref<0xi8> {tfc.arena}) attributes {tfc.arena_bytes = 0 : i64, tfc.entry = "in_place"} {
  %a = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
  call @k0_exp(%in, %a) {tfc.in_place_ok} : (memref<4x16xf32>, memref<4x16xf32>) -> ()
  %b = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
  call @k1_neg(%a, %b) {tfc.in_place_ok} : (memref<4x16xf32>, memref<4x16xf32>) -> ()
  %c = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
  call @k2_tanh(%b, %c) {tfc.in_place_ok} : (memref<4x16xf32>, memref<4x16xf32>) -> ()
  %d = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
  call @k3_add(%b, %c, %d) {tfc.in_place_ok} : (memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>) -> ()
  %e = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
  call @k4_softmax(%d, %e) : (memref<4x16xf32>, memref<4x16xf32>) -> ()
  call @k5_abs(%e, %out) {tfc.in_place_ok} : (memref<4x16xf32>, memref<4x16xf32>) -> ()
  return
}

// -----

// Tests that a result does not take an operand's bytes when the shapes
// differ (a broadcast operand), even at a tfc.in_place_ok call.

// CHECK: tfc-plan-memory: @broadcast: arena 320 bytes
// CHECK-LABEL: func.func @broadcast(
// CHECK:         memref.view %{{.*}}[%c256{{.*}}][] : memref<320xi8> to memref<16xf32>
// CHECK:         memref.view %{{.*}}[%c0{{.*}}][] : memref<320xi8> to memref<4x16xf32>
func.func private @k0(memref<16xf32>, memref<16xf32>)
func.func private @k1_add(memref<16xf32>, memref<4x16xf32>, memref<4x16xf32>)
func.func private @k2(memref<4x16xf32>, memref<4x16xf32>)
func.func @broadcast(%in: memref<16xf32> {tfc.input_index = 0 : i64}, %x: memref<4x16xf32> {tfc.input_index = 1 : i64}, %out: memref<4x16xf32> {tfc.output_index = 0 : i64}, %arena: memref<0xi8> {tfc.arena}) attributes {tfc.arena_bytes = 0 : i64, tfc.entry = "broadcast"} {
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  call @k0(%in, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  %b = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
  call @k1_add(%a, %x, %b) {tfc.in_place_ok} : (memref<16xf32>, memref<4x16xf32>, memref<4x16xf32>) -> ()
  call @k2(%b, %out) : (memref<4x16xf32>, memref<4x16xf32>) -> ()
  return
}

// -----

// Tests that a stored value lives to the copy back into its state at the
// end of the entry (as tfc-lower-to-kernels writes it when the state's old
// value is read after the value's kernel): the later intermediates, %m and
// %e (one buffer: in place), do not take its bytes.

// CHECK: tfc-plan-memory: @stored: arena 128 bytes, intermediates 192 bytes, live bound 128 bytes
// CHECK-LABEL: func.func @stored(
// CHECK-SAME:      %[[STATE:[^:]*]]: memref<16xf32> {tfc.state_index = 0 : i64}
// CHECK:         %[[S:.*]] = memref.view %{{.*}}[%c0{{.*}}][]
// CHECK-NEXT:    call @k0_softmax(%{{.*}}, %[[S]])
// CHECK:         %[[M:.*]] = memref.view %{{.*}}[%c64{{.*}}][]
// CHECK-NEXT:    call @k1_mul(%[[STATE]], %{{.*}}, %[[M]])
// CHECK:         %[[E:.*]] = memref.view %{{.*}}[%c64{{.*}}][]
// CHECK-NEXT:    call @k2_exp(%[[M]], %[[E]])
// CHECK:         memref.copy %[[S]], %[[STATE]]
// CHECK-NEXT:    return
func.func private @k0_softmax(memref<16xf32>, memref<16xf32>)
func.func private @k1_mul(memref<16xf32>, memref<16xf32>, memref<16xf32>)
func.func private @k2_exp(memref<16xf32>, memref<16xf32>)
func.func private @k3_add(memref<16xf32>, memref<16xf32>, memref<16xf32>)
func.func @stored(%state: memref<16xf32> {tfc.state_index = 0 : i64}, %x: memref<16xf32> {tfc.input_index = 0 : i64}, %out: memref<16xf32> {tfc.output_index = 0 : i64}, %arena: memref<0xi8> {tfc.arena}) attributes {tfc.arena_bytes = 0 : i64, tfc.entry = "stored"} {
  %s = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  call @k0_softmax(%x, %s) : (memref<16xf32>, memref<16xf32>) -> ()
  %m = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  call @k1_mul(%state, %x, %m) {tfc.in_place_ok} : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
  %e = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  call @k2_exp(%m, %e) {tfc.in_place_ok} : (memref<16xf32>, memref<16xf32>) -> ()
  call @k3_add(%e, %x, %out) {tfc.in_place_ok} : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
  memref.copy %s, %state : memref<16xf32> to memref<16xf32>
  return
}
