// A planned kernel whose inner loop steps by 0 (the fuzzer's mutant of a
// codegen-phase file): MLIR 19's scf.for verifier lets it through.
func.func private @k0(%m: memref<8xf32>) attributes {tfc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c1 to %c8 step %c0 {
    %v = memref.load %m[%i] : memref<8xf32>
    memref.store %v, %m[%i] : memref<8xf32>
  }
  return
}
func.func @main(%m: memref<8xf32>) {
  call @k0(%m) : (memref<8xf32>) -> ()
  return
}
