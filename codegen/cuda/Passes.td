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
  let options = [
    Option<"tf32", "tf32", "bool", /*default=*/"false",
           "Run f32 matmul and linear on tensor cores through TF32 (10 bits "
           "of mantissa per operand, f32 sums); exact f32 otherwise">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect"];
}

def TfcCudaCompileKernels : Pass<"tfc-cuda-compile-kernels", "mlir::ModuleOp"> {
  let summary = "Compiles every CUDA kernel with NVRTC for the chosen GPU";
  let description = [{
    The second pass of the CUDA target's `codegen` phase: the module's
    kernels (`tfc.cuda.source`), each after `#include "tfc/prelude.cuh"`
    (the kernel library `codegen/cuda/kernels`, embedded in the compiler and
    handed to NVRTC as headers), are compiled by NVRTC as one program into a cubin for `arch` (sm_80, sm_90, sm_90a, ...)
    and PTX for its virtual architecture (newer GPUs compile it when they
    load the artifact). The module records them for the artifact
    (`tfc.device = "cuda"`, `tfc.device_arch`, `tfc.device_kernels`: the
    kernel names in launch-index order, `tfc.device_image`: the cubin,
    `tfc.device_portable`: the PTX), and each kernel its
    `tfc.device_kernel_index`; a kernel whose registers ptxas spills to local
    memory records the bytes in `tfc.cuda.spill_bytes`. A kernel that does
    not compile fails the
    pass with its name and NVRTC's log. With `dump-dir`, every kernel's
    `.cu` and `.ptx` (compiled alone) are written there, the failing
    kernel's `.cu` too, and the library's headers under `tfc/`, so that a
    dumped `.cu` also compiles as host C++.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90\"",
           "The GPU architecture: sm_80, sm_86, sm_89, sm_90, sm_90a, ...">,
    Option<"dumpDir", "dump-dir", "std::string", /*default=*/"\"\"",
           "Write each kernel's .cu and .ptx to this folder">,
  ];
}

def TfcCudaLaunchKernels : Pass<"tfc-cuda-launch-kernels", "mlir::ModuleOp"> {
  let summary = "Makes the kernel calls of entries launches on the GPU";
  let description = [{
    The last pass of the CUDA target's `llvm` phase, on the LLVM dialect.
    Entries stay host code: they compute device addresses (views of the
    arena) but never dereference one. Each kernel declaration
    (`tfc.device_kernel_index`) gets a body that packs its pointer
    arguments and its launch shape (`tfc_device_launch_t`: grid, block,
    dynamic shared bytes) into stack arrays and calls
    `tfc_kernels_device_launch(index, &shape, args, num_args)`. The shape is
    the kernel's `tfc.cuda.launch` (a tiled kernel) or 256-thread blocks
    covering its `tfc.cuda.threads` work items (at most 65536 blocks; those
    kernels loop grid-stride). In entries, a copy
    (`llvm.intr.memcpy`, the memory plan's copies) becomes
    `tfc_kernels_device_copy(dst, src, bytes)`, and the address of a
    global `tfc_kernels_device_constant(address, bytes)`: the
    runtime's device copy of it. The kernel library forwards these to the
    runtime (tfc_host_api_t.device_*). Any other load or store of memory in
    an entry is an error at its location.

    ```mlir
    // before
    llvm.func @k0_exp(!llvm.ptr, !llvm.ptr)
        attributes {tfc.cuda.threads = 4 : i64, tfc.device_kernel_index = 0 : i32}
    // after
    llvm.func internal @k0_exp(%arg0: !llvm.ptr, %arg1: !llvm.ptr) {
      %args = llvm.alloca %c1 x !llvm.array<2 x ptr> : (i64) -> !llvm.ptr
      llvm.store %arg0, ... ; llvm.store %arg1, ...
      %shape = llvm.alloca %c1 x !llvm.array<7 x i32> : (i64) -> !llvm.ptr
      llvm.store %c1_i32, ... ; (grid 1 1 1, block 32 1 1, shared 0)
      llvm.call @tfc_kernels_device_launch(%c0, %shape, %args, %c2)
      llvm.return
    }
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // TFC_CODEGEN_CUDA_PASSES_TD
