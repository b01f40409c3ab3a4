//===- Passes.td - CPU codegen passes -------------------------------------===//
#ifndef TFC_CODEGEN_CPU_PASSES_TD
#define TFC_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfcLowerToKernels : Pass<"tfc-lower-to-kernels", "mlir::ModuleOp"> {
  let summary = "Turns every entry into a planned program of kernel calls";
  let description = [{
    The graph-to-program step of CPU codegen. Every op of an entry function
    becomes a call of a kernel: a private function on memrefs whose body the
    kernel emitters write (codegen/cpu/*Kernels.cpp). Identical kernels
    (same op, attributes and types) are emitted once and shared. Every
    intermediate gets a byte offset in one arena per entry; parameters, state,
    inputs and outputs become arguments of the entry:

    ```mlir
    func.func @forward(%p0: memref<16x8xf32> {tfc.param_index = 0 : i64},
                       %in0: memref<2x4xi32> {tfc.input_index = 0 : i64},
                       %out0: memref<2x4x16xf32> {tfc.output_index = 0 : i64},
                       %arena: memref<256xi8> {tfc.arena})
        attributes {tfc.arena_bytes = 256 : i64, tfc.entry = "forward"} {
      %0 = memref.view %arena[%c0][] : memref<256xi8> to memref<2x4x8xf32>
      call @k0_embedding(%p0, %in0, %0) : (...) -> ()
      call @k1_matmul(%0, %p0, %out0) : (...) -> ()
      return
    }
    ```

    A state read and written back by the same kv_cache_update is updated in
    place. Stored state is copied back at the end of the entry; a load after a
    store sees the stored value. An intermediate's arena bytes are reused
    after its last use (best fit, in program order; aliases such as reshape
    views keep them alive); the entry records `tfc.intermediate_bytes` (all
    intermediates added up) and `tfc.live_bound_bytes` (the most live at
    once) next to `tfc.arena_bytes`. A separate scheduling and planning pass
    with a verifier is future work.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::func::FuncDialect",
    "mlir::linalg::LinalgDialect", "mlir::LLVM::LLVMDialect",
    "mlir::math::MathDialect", "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
  ];
}

#endif // TFC_CODEGEN_CPU_PASSES_TD
