// RUN: tfc-opt %s -split-input-file -verify-diagnostics --tfc-verify-memory-plan

// Tests of tfc-verify-memory-plan on hand-written planned entries: what it
// accepts (reuse after the last use, the documented in-place case) and what
// it refuses, with the two buffers, their byte ranges and the op where both
// are live.

// A valid plan: %b reuses %a's bytes after %a's last use (@k1); %c is written
// over %b where %b dies, at a call marked tfc.in_place_ok, with the same
// shape.
func.func private @k0(memref<16xf32>, memref<16xf32>)
func.func private @k1(memref<16xf32>, memref<16xf32>)
func.func private @k2_neg(memref<16xf32>, memref<16xf32>)
func.func private @k3(memref<16xf32>, memref<16xf32>)
func.func @valid(%in: memref<16xf32> {tfc.input_index = 0 : i64}, %out: memref<16xf32> {tfc.output_index = 0 : i64}, %arena: memref<128xi8> {tfc.arena}) attributes {tfc.arena_bytes = 128 : i64, tfc.entry = "valid"} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %a = memref.view %arena[%c0][] : memref<128xi8> to memref<16xf32>
  call @k0(%in, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  %t = memref.view %arena[%c64][] : memref<128xi8> to memref<16xf32>
  call @k1(%a, %t) : (memref<16xf32>, memref<16xf32>) -> ()
  %b = memref.view %arena[%c0][] : memref<128xi8> to memref<16xf32>
  call @k0(%t, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  %c = memref.view %arena[%c0][] : memref<128xi8> to memref<16xf32>
  call @k2_neg(%b, %c) {tfc.in_place_ok} : (memref<16xf32>, memref<16xf32>) -> ()
  call @k3(%c, %out) : (memref<16xf32>, memref<16xf32>) -> ()
  return
}

// -----

// A planted overlap: %b is written at @k1 while %a, whose bytes [0, 96) it
// overlaps from byte 64, is still read there.
func.func private @k0(memref<24xf32>, memref<24xf32>)
func.func private @k1(memref<24xf32>, memref<24xf32>)
func.func @overlap(%in: memref<24xf32> {tfc.input_index = 0 : i64}, %out: memref<24xf32> {tfc.output_index = 0 : i64}, %arena: memref<160xi8> {tfc.arena}) attributes {tfc.arena_bytes = 160 : i64, tfc.entry = "overlap"} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  // expected-note @below {{the other buffer}}
  %a = memref.view %arena[%c0][] : memref<160xi8> to memref<24xf32>
  call @k0(%in, %a) : (memref<24xf32>, memref<24xf32>) -> ()
  // expected-error @below {{memory plan: 'memref.view' at bytes [64, 160) overlaps 'memref.view' at bytes [0, 96) of the arena while both are live at 'func.call' @k1}}
  %b = memref.view %arena[%c64][] : memref<160xi8> to memref<24xf32>
  // expected-note @below {{both are live here}}
  call @k1(%a, %b) : (memref<24xf32>, memref<24xf32>) -> ()
  call @k0(%b, %out) : (memref<24xf32>, memref<24xf32>) -> ()
  return
}

// -----

// The same bytes written over an operand that dies at the call, but the call
// is not marked tfc.in_place_ok.
func.func private @k0(memref<16xf32>, memref<16xf32>)
func.func private @k1_softmax(memref<16xf32>, memref<16xf32>)
func.func @not_marked(%in: memref<16xf32> {tfc.input_index = 0 : i64}, %out: memref<16xf32> {tfc.output_index = 0 : i64}, %arena: memref<64xi8> {tfc.arena}) attributes {tfc.arena_bytes = 64 : i64, tfc.entry = "not_marked"} {
  %c0 = arith.constant 0 : index
  // expected-note @below {{the other buffer}}
  %a = memref.view %arena[%c0][] : memref<64xi8> to memref<16xf32>
  call @k0(%in, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  // expected-error @below {{'memref.view' at bytes [0, 64) overlaps 'memref.view' at bytes [0, 64) of the arena while both are live at 'func.call' @k1_softmax}}
  %b = memref.view %arena[%c0][] : memref<64xi8> to memref<16xf32>
  // expected-note @below {{both are live here}}
  call @k1_softmax(%a, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  call @k0(%b, %out) : (memref<16xf32>, memref<16xf32>) -> ()
  return
}

// -----

// A marked call, but the operand whose bytes the result takes is read again
// later, through a reshape of it.
func.func private @k0(memref<16xf32>, memref<16xf32>)
func.func private @k1_neg(memref<16xf32>, memref<16xf32>)
func.func private @k2(memref<4x4xf32>, memref<16xf32>, memref<16xf32>)
func.func @still_live(%in: memref<16xf32> {tfc.input_index = 0 : i64}, %out: memref<16xf32> {tfc.output_index = 0 : i64}, %arena: memref<64xi8> {tfc.arena}) attributes {tfc.arena_bytes = 64 : i64, tfc.entry = "still_live"} {
  %c0 = arith.constant 0 : index
  // expected-note @below {{the other buffer}}
  %a = memref.view %arena[%c0][] : memref<64xi8> to memref<16xf32>
  %v = memref.expand_shape %a [[0, 1]] output_shape [4, 4] : memref<16xf32> into memref<4x4xf32>
  call @k0(%in, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  // expected-error @below {{overlaps 'memref.view' at bytes [0, 64) of the arena while both are live at 'func.call' @k1_neg}}
  %b = memref.view %arena[%c0][] : memref<64xi8> to memref<16xf32>
  // expected-note @below {{both are live here}}
  call @k1_neg(%a, %b) {tfc.in_place_ok} : (memref<16xf32>, memref<16xf32>) -> ()
  call @k2(%v, %b, %out) : (memref<4x4xf32>, memref<16xf32>, memref<16xf32>) -> ()
  return
}

// -----

// A marked call, but the result is not on the same bytes as the dying
// operand: it starts 64 bytes in.
func.func private @k0(memref<32xf32>, memref<32xf32>)
func.func private @k1_neg(memref<32xf32>, memref<32xf32>)
func.func @shifted(%in: memref<32xf32> {tfc.input_index = 0 : i64}, %out: memref<32xf32> {tfc.output_index = 0 : i64}, %arena: memref<192xi8> {tfc.arena}) attributes {tfc.arena_bytes = 192 : i64, tfc.entry = "shifted"} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  // expected-note @below {{the other buffer}}
  %a = memref.view %arena[%c0][] : memref<192xi8> to memref<32xf32>
  call @k0(%in, %a) : (memref<32xf32>, memref<32xf32>) -> ()
  // expected-error @below {{'memref.view' at bytes [64, 192) overlaps 'memref.view' at bytes [0, 128)}}
  %b = memref.view %arena[%c64][] : memref<192xi8> to memref<32xf32>
  // expected-note @below {{both are live here}}
  call @k1_neg(%a, %b) {tfc.in_place_ok} : (memref<32xf32>, memref<32xf32>) -> ()
  call @k0(%b, %out) : (memref<32xf32>, memref<32xf32>) -> ()
  return
}

// -----

// A buffer past the end of the arena.
func.func private @k0(memref<16xf32>, memref<16xf32>)
func.func @outside(%in: memref<16xf32> {tfc.input_index = 0 : i64}, %arena: memref<64xi8> {tfc.arena}) attributes {tfc.arena_bytes = 64 : i64, tfc.entry = "outside"} {
  %c32 = arith.constant 32 : index
  // expected-error @below {{memory plan: buffer [32, 96) lies outside the arena of 64 bytes}}
  %a = memref.view %arena[%c32][] : memref<64xi8> to memref<16xf32>
  call @k0(%in, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  return
}

// -----

// A buffer at an offset known only at run time.
func.func private @k0(memref<16xf32>, memref<16xf32>)
func.func @dynamic(%in: memref<16xf32> {tfc.input_index = 0 : i64}, %i: index, %arena: memref<128xi8> {tfc.arena}) attributes {tfc.arena_bytes = 128 : i64, tfc.entry = "dynamic"} {
  // expected-error @below {{memory plan: a buffer must have a constant offset and a static shape}}
  %a = memref.view %arena[%i][] : memref<128xi8> to memref<16xf32>
  call @k0(%in, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  return
}

// -----

// A buffer left outside the arena (tfc-plan-memory did not run).
func.func private @k0(memref<16xf32>, memref<16xf32>)
func.func @unplanned(%in: memref<16xf32> {tfc.input_index = 0 : i64}, %arena: memref<0xi8> {tfc.arena}) attributes {tfc.arena_bytes = 0 : i64, tfc.entry = "unplanned"} {
  // expected-error @below {{memory plan: a buffer of @unplanned is not placed in the arena}}
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  call @k0(%in, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  return
}
