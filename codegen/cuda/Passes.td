//===- Passes.td - CUDA codegen passes ------------------------------------===//
#ifndef TFC_CODEGEN_CUDA_PASSES_TD
#define TFC_CODEGEN_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfcCudaEmitKernels : Pass<"tfc-cuda-emit-kernels", "mlir::ModuleOp"> {
  let summary = "Writes every kernel of the planned program as CUDA C++";
  let description = [{
    The first pass of the CUDA target's `codegen` phase. Each kernel of the
    planned program (its op on tensors, from tfc-lower-to-kernels) becomes an
    `extern "C" __global__` function in CUDA C++, kept on the kernel as
    `tfc.cuda.source` with its launch size `tfc.cuda.threads` (the work
    items of its grid-stride loop); the kernel itself becomes a declaration,
    launched by the host. Pointwise ops and fused pointwise groups are
    printed from the scalar functions the CPU uses too (codegen/scalar), so
    both targets compute the same thing. An op or element type without a
    CUDA kernel yet is reported at its location.

    ```mlir
    // before
    func.func private @k0_exp(%arg0: memref<4xf32>, %arg1: memref<4xf32>)
        attributes {tfc.kernel} {
      %0 = bufferization.to_tensor %arg0 restrict : memref<4xf32>
      %1 = tfc.exp %0 : tensor<4xf32>
      bufferization.materialize_in_destination %1 in restrict writable %arg1
          : (tensor<4xf32>, memref<4xf32>) -> ()
      return
    }
    // after
    func.func private @k0_exp(memref<4xf32>, memref<4xf32>) attributes {
        tfc.cuda.source = "extern \"C\" __global__ void k0_exp(const float* in0, float* out0) {...}",
        tfc.cuda.threads = 4 : i64, tfc.kernel}
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect"];
}

def TfcCudaCompileKernels : Pass<"tfc-cuda-compile-kernels", "mlir::ModuleOp"> {
  let summary = "Compiles every CUDA kernel with NVRTC for the chosen GPU";
  let description = [{
    The second pass of the CUDA target's `codegen` phase: the module's
    kernels (`tfc.cuda.source`, after the shared prelude) are compiled by
    NVRTC into PTX for `arch` (sm_80, sm_90, sm_90a, ...), and each kernel
    records the size of its PTX in `tfc.cuda.ptx_bytes`. A kernel that does
    not compile fails the pass with its name and NVRTC's log. With
    `dump-dir`, every kernel's `.cu` and `.ptx` are written there (the
    failing kernel's `.cu` too).
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90\"",
           "The GPU architecture: sm_80, sm_86, sm_89, sm_90, sm_90a, ...">,
    Option<"dumpDir", "dump-dir", "std::string", /*default=*/"\"\"",
           "Write each kernel's .cu and .ptx to this folder">,
  ];
}

#endif // TFC_CODEGEN_CUDA_PASSES_TD
