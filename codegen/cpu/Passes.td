//===- Passes.td - CPU codegen passes -------------------------------------===//
#ifndef TFC_CODEGEN_CPU_PASSES_TD
#define TFC_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfcCpuEmitKernels : Pass<"tfc-cpu-emit-kernels", "mlir::ModuleOp"> {
  let summary = "Writes the CPU code of every kernel of the planned program";
  let description = [{
    The CPU target's `codegen` phase. A kernel of the planned program
    (`{tfc.kernel}`, from tfc-lower-to-kernels) holds its op on tensors
    between `bufferization.to_tensor` of its operand buffers and
    `bufferization.materialize_in_destination` into its result buffers. This
    pass replaces that body with CPU code on the same buffers: loops in
    linalg/scf/arith/math on memrefs, or a call of the hand-written kernel
    library (matmul, linear with its epilogue, attention, sampling), written
    by the emitter families of codegen/cpu/*Kernels.cpp. Kernels become
    internal in LLVM IR so that LLVM may specialize them. A kernel that
    already has CPU code is left as it is.

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
    func.func private @k0_exp(%arg0: memref<4xf32>, %arg1: memref<4xf32>)
        attributes {llvm.linkage = #llvm.linkage<internal>, tfc.kernel} {
      linalg.generic {...} ins(%arg0 : memref<4xf32>) outs(%arg1 : memref<4xf32>) {
      ^bb0(%in: f32, %out: f32):
        %e = math.exp %in : f32
        linalg.yield %e : f32
      }
      return
    }
    ```

    An op the CPU has no kernel for is reported at its location.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::func::FuncDialect",
    "mlir::linalg::LinalgDialect", "mlir::LLVM::LLVMDialect",
    "mlir::math::MathDialect", "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
  ];
}

def TfcCpuKernelTimers : Pass<"tfc-cpu-kernel-timers", "mlir::ModuleOp"> {
  let summary = "Brackets every kernel launch of an entry with profiling hooks";
  let description = [{
    Part of the CPU target's `codegen` phase, after tfc-cpu-emit-kernels.
    Every call of a kernel (`{tfc.kernel}`) in a planned entry is preceded
    by `call @tfc_kernels_kernel_begin(i)` and followed by
    `call @tfc_kernels_kernel_end(i)`, where `i` counts the entry's kernel
    launches in order: the index of the launch in the artifact's kernel table
    (tfc_entry_t.kernels). The kernel library forwards them to the host's
    `kernel_begin`/`kernel_end` (tfc-run profile), or returns at once when
    the host has none: about two predictable branches per launch.

    ```mlir
    %c3 = arith.constant 3 : i32
    call @tfc_kernels_kernel_begin(%c3) : (i32) -> ()
    call @k3_add(%a, %b, %c) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
    call @tfc_kernels_kernel_end(%c3) : (i32) -> ()
    ```

    An entry that already has the hooks is left as it is.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect"];
}

def TfcCpuMergeAliasedArgs : Pass<"tfc-cpu-merge-aliased-args", "mlir::ModuleOp"> {
  let summary = "Gives a kernel one argument where every call passes one buffer twice";
  let description = [{
    Part of the lowering to LLVM, first. A kernel that updates a buffer in
    place (AdamW's parameter and moments, a residual added into its input)
    is called with the same buffer as an operand and as a result. As two
    arguments, LLVM cannot prove them equal: the vectorizer guards the loop
    with run-time overlap checks, which an in-place call fails, and the call
    runs the scalar loop. When every call of a kernel passes the same value
    in two positions, the later argument is replaced by the earlier one and
    dropped from the kernel and its calls; loads and stores then use one
    pointer at the same index, which vectorizes without checks.

    ```mlir
    // before
    call @k3_adamw(%p, %g, %p) : (memref<768xf32>, memref<768xf32>, memref<768xf32>) -> ()
    // after
    call @k3_adamw(%p, %g) : (memref<768xf32>, memref<768xf32>) -> ()
    ```

    Positions that differ between calls (one call in place, another not)
    stay separate.
  }];
}

def TfcCpuParallelLoops : Pass<"tfc-cpu-parallel-loops", "mlir::ModuleOp"> {
  let summary = "Moves the parallel loops of kernels into parts that run on the runtime's threads";
  let description = [{
    Part of the lowering to LLVM, after linalg becomes loops (`scf.parallel`
    for the parallel dimensions). Every `scf.parallel` at the top of a kernel
    whose work (loop-body operations over all iterations) is large enough to
    pay for waking a thread moves into a function of its own, `@kN_partI`,
    that takes the kernel's arguments, the scalars the loop reads from before
    it (a loaded position, a count), and `begin`/`end` of the loop's first
    dimension. Leading dimensions are collapsed into that first one until it
    has enough rows for the threads; the innermost dimension stays a loop of
    its own for the vectorizer. Constants and views of the argument buffers
    are recomputed in the part, so strides stay constant. The kernel calls
    the part over the whole range; tfc-cpu-launch-parallel makes that call a
    `parallel_for` of the runtime.

    ```mlir
    // before
    func.func private @k3_add(%a: memref<256x512xf32>, %b: memref<256x512xf32>,
                              %c: memref<256x512xf32>) attributes {tfc.kernel} {
      scf.parallel (%i, %j) = (%c0, %c0) to (%c256, %c512) step (%c1, %c1) {...}
    }
    // after
    func.func private @k3_add(...) attributes {tfc.kernel} {
      call @k3_add_part0(%a, %b, %c, %c0, %c256) : (...) -> ()
    }
    func.func private @k3_add_part0(%a: ..., %b: ..., %c: ..., %begin: index,
                                    %end: index)
        attributes {tfc.parallel = array<i64: 256, 64>} {
      scf.parallel (%i, %j) = (%begin, %c0) to (%end, %c512) step (%c1, %c1) {...}
    }
    ```

    Every iteration runs on one thread in the original order, so results do
    not depend on the number of threads or the split. A loop that captures a
    buffer other than an argument or a view of one stays serial.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"65536",
           "The least work (loop-body operations over all iterations) of a "
           "loop that runs on several threads; 0: every parallel loop, "
           "negative: none">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect",
                           "mlir::LLVM::LLVMDialect", "mlir::scf::SCFDialect"];
}

def TfcCpuLaunchParallel : Pass<"tfc-cpu-launch-parallel", "mlir::ModuleOp"> {
  let summary = "Turns calls of parallel parts into parallel_for launches";
  let description = [{
    The end of the lowering to LLVM, on the LLVM dialect. For every function
    marked `{tfc.parallel = array<i64: n, grain>}` by tfc-cpu-parallel-loops,
    a trampoline `@<part>_task(ctx, begin, end)` unpacks the arguments from a
    struct and calls the part; every call of the part becomes a store of its
    arguments into a stack slot of that struct and a call

    ```mlir
    llvm.call @tfc_kernels_parallel_for(%n, %grain, %task, %slot)
        : (i64, i64, !llvm.ptr, !llvm.ptr) -> ()
    ```

    which the kernel library forwards to the host's `parallel_for`
    (tfc_host_api_t), or runs as one range when the host has none.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def TfcPolynomialMath : Pass<"tfc-polynomial-math", "mlir::ModuleOp"> {
  let summary = "Replaces tanh and erf by polynomial approximations in arith";
  let description = [{
    Part of the lowering to LLVM. `math.tanh` and `math.erf` would become
    calls of libm's scalar tanhf/erff, one call per element that the loop
    vectorizer cannot widen: in a GPT-2 training step the GELU's tanh alone
    took a tenth of the time. MLIR's rational approximations (those of
    Eigen: tanh clamped to +-7.9 and accurate to a few ulp, erf to ~1e-7) are
    plain arith and fused multiply-adds, so LLVM vectorizes them with the rest
    of the loop. The multiply-adds become `llvm.intr.fma` here: left as
    `math.fma`, convert-math-to-libm would make each one a call of libm's
    scalar `fmaf` (which is what the GELU kernels of a GPT-2 training step
    spent half of their time in, unvectorized).

    ```mlir
    // before
    %t = math.tanh %x : f32
    // after: a clamp, then a ratio of two odd/even polynomials in %x
    %c = arith.maximumf ...
    %p = llvm.intr.fma(...) : (f32, f32, f32) -> f32
    %t = arith.divf %p, %q : f32
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

#endif // TFC_CODEGEN_CPU_PASSES_TD
