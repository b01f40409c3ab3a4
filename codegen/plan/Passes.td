//===- Passes.td - target-neutral planning passes -------------------------===//
//
// Graph -> the planned program: every entry a sequence of kernel calls on
// buffers placed in one arena. Target-neutral: what differs between targets
// (buffer alignment, which kernels may write over an operand) is asked of
// the target named by the `target` option (codegen/target/Target.h).
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_PLAN_PASSES_TD
#define TFC_CODEGEN_PLAN_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfcLowerToKernels : Pass<"tfc-lower-to-kernels", "mlir::ModuleOp"> {
  let summary = "Turns every entry into a program of kernel calls on buffers";
  let description = [{
    The graph-to-program step, the same for every target. Every op of an
    entry function becomes a call of a kernel: a private function on memrefs
    (`{tfc.kernel}`) whose body is still the op on tensors, read from its
    operand buffers with `bufferization.to_tensor` and written into its result
    buffers with `bufferization.materialize_in_destination`. The target's
    `codegen` phase replaces those bodies with its own code (on the CPU,
    `tfc-cpu-emit-kernels`). Identical kernels (same op, attributes and
    types) are emitted once and shared. Parameters, state, inputs and outputs
    become arguments of the entry; a result that the entry returns is written
    into its output argument directly. Every other intermediate gets its own
    buffer, a `memref.alloc` aligned as the target asks, that
    `tfc-plan-memory` then places in the arena (the last argument,
    `{tfc.arena}`, left empty here); a reshape of an intermediate is a view of
    the same buffer (`memref.collapse_shape` to 1-D, then
    `memref.expand_shape`), of an argument a copy. The module records the
    target in `tfc.target`.

    A call whose kernel, by the target's word, reads every operand element
    before it writes the result element at the same index (pointwise ops,
    `tfc.fused "pointwise"`, cross_entropy_grad over its logits on the CPU)
    is marked `tfc.in_place_ok`: a result may take the bytes of an operand of
    its shape and element size that dies at that call.

    ```mlir
    // before
    func.func @forward(%x: tensor<2x6xf32>) -> tensor<3x4xf32> {
      %0 = tfc.exp %x : tensor<2x6xf32>
      %1 = tfc.reshape %0 : tensor<2x6xf32> -> tensor<3x4xf32>
      %2 = tfc.abs %1 : tensor<3x4xf32>
      return %2 : tensor<3x4xf32>
    }
    // after
    func.func private @k0_exp(%arg0: memref<2x6xf32>, %arg1: memref<2x6xf32>)
        attributes {tfc.kernel} {
      %0 = bufferization.to_tensor %arg0 restrict : memref<2x6xf32>
      %1 = tfc.exp %0 : tensor<2x6xf32>
      bufferization.materialize_in_destination %1 in restrict writable %arg1
          : (tensor<2x6xf32>, memref<2x6xf32>) -> ()
      return
    }
    func.func @forward(%x: memref<2x6xf32> {tfc.input_index = 0 : i64, ...},
                       %out: memref<3x4xf32> {tfc.output_index = 0 : i64, ...},
                       %arena: memref<0xi8> {tfc.arena})
        attributes {tfc.arena_bytes = 0 : i64, tfc.entry = "forward",
                    tfc.num_kernels = 2 : i64} {
      %0 = memref.alloc() {alignment = 64 : i64} : memref<2x6xf32>
      call @k0_exp(%x, %0) {tfc.in_place_ok} : (...) -> ()
      %f = memref.collapse_shape %0 [[0, 1]] : memref<2x6xf32> into memref<12xf32>
      %1 = memref.expand_shape %f [[0, 1]] output_shape [3, 4] : memref<12xf32> into memref<3x4xf32>
      call @k1_abs(%1, %out) {tfc.in_place_ok} : (...) -> ()
      return
    }
    ```

    A state read and written back by the same kv_cache_update is updated in
    place: its kernel takes (update, position, cache) and its body reads and
    writes the same cache buffer. A stored value is computed straight into
    its state or parameter argument when nothing reads the symbol's old value
    once its kernel has started (a pointwise kernel may read it element by
    element as it writes: an optimizer's update); else it is an intermediate
    copied back at the end of the entry. A load after a store sees the stored
    value.

    A module that is already planned (an entry with `tfc.entry`) is refused
    with a message: this pass takes the graph.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "The target the program is planned for (codegen/target)">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::bufferization::BufferizationDialect",
    "mlir::func::FuncDialect", "mlir::memref::MemRefDialect",
  ];
}

def TfcPlanMemory : Pass<"tfc-plan-memory", "mlir::ModuleOp"> {
  let summary = "Places every intermediate buffer of an entry in one arena";
  let description = [{
    For every entry (a function with a `{tfc.arena}` argument), the buffers
    that tfc-lower-to-kernels allocated (`memref.alloc`) become byte ranges
    of the arena. A buffer is live from the first to the last use of it or of
    any of its views, in the entry's op order (returned and stored values are
    read by the copies at the end, so they live to the end). Two buffers live
    at the same op get disjoint bytes, with one exception: at a call marked
    `tfc.in_place_ok`, a result takes the bytes of an operand of its shape
    and element size whose buffer dies at that call (they become one buffer).

    Placement is offline, greedy by size: the buffers, largest first, each
    go to the lowest offset aligned as the module's target (`tfc.target`)
    asks (64 bytes on the CPU) that overlaps no buffer already
    placed whose live interval intersects its own. Each alloc becomes a
    `memref.view` of the arena at its offset; the arena's type and the
    entry's `tfc.arena_bytes` become the planned size (at least one
    alignment unit).
    The entry also records `tfc.intermediate_bytes` (every buffer's bytes,
    rounded up to the alignment, added up) and `tfc.live_bound_bytes` (the most bytes
    live at any op, after in-place sharing: a lower bound for any placement
    in this order).

    ```mlir
    // before (from tfc-lower-to-kernels)
    func.func @f(%x: memref<2x6xf32> {...}, %out: memref<3x4xf32> {...},
                 %arena: memref<0xi8> {tfc.arena})
        attributes {tfc.arena_bytes = 0 : i64, ...} {
      %0 = memref.alloc() {alignment = 64 : i64} : memref<2x6xf32>
      call @k0_exp(%x, %0) {tfc.in_place_ok} : (...) -> ()
      %1 = memref.alloc() {alignment = 64 : i64} : memref<2x6xf32>
      call @k1_neg(%0, %1) {tfc.in_place_ok} : (...) -> ()
      call @k2_abs(%1, %out) {tfc.in_place_ok} : (...) -> ()
      return
    }
    // after: %0 dies at k1_neg, whose result takes its bytes
    func.func @f(%x: memref<2x6xf32> {...}, %out: memref<3x4xf32> {...},
                 %arena: memref<64xi8> {tfc.arena})
        attributes {tfc.arena_bytes = 64 : i64,
                    tfc.intermediate_bytes = 128 : i64,
                    tfc.live_bound_bytes = 64 : i64, ...} {
      %c0 = arith.constant 0 : index
      %0 = memref.view %arena[%c0][] : memref<64xi8> to memref<2x6xf32>
      call @k0_exp(%x, %0) {tfc.in_place_ok} : (...) -> ()
      %c0_0 = arith.constant 0 : index
      %1 = memref.view %arena[%c0_0][] : memref<64xi8> to memref<2x6xf32>
      call @k1_neg(%0, %1) {tfc.in_place_ok} : (...) -> ()
      ...
    }
    ```
  }];
  let options = [
    Option<"print", "print", "bool", /*default=*/"false",
           "Print, for every entry, the arena, the intermediate bytes and "
           "the live bound to stdout">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
  ];
}

def TfcVerifyMemoryPlan : Pass<"tfc-verify-memory-plan", "mlir::ModuleOp"> {
  let summary = "Proves that no two live buffers of an entry share arena bytes";
  let description = [{
    Checks a planned entry from its IR alone, independently of
    tfc-plan-memory. A buffer is a `memref.view` of the arena argument
    (`{tfc.arena}`) at a constant byte offset, as many bytes as its type
    holds; it is live from the first to the last use of it or of any view of
    it (collapse_shape, expand_shape, subview, ...), in the entry's op order.
    The pass fails, naming both buffers, their byte ranges and the op where
    both are live, if two buffers live at the same op overlap, unless that op
    is a call marked `tfc.in_place_ok` where the first buffer dies and the
    second is first used (written), the two have the same bytes, and the
    call takes a view of each with the same shape and element size (the
    documented in-place case). It also fails on a buffer that lies outside
    the arena, a non-constant offset, a use of the arena other than
    `memref.view`, or a `memref.alloc` left in an entry. The IR is not
    changed.

    ```mlir
    // error: 'memref.view' [0, 96) and 'memref.view' [64, 160) of the arena
    // overlap while both are live at 'func.call' @k1_neg
    %0 = memref.view %arena[%c0][] : memref<160xi8> to memref<24xf32>
    call @k0_exp(%x, %0) : (...) -> ()
    %1 = memref.view %arena[%c64][] : memref<160xi8> to memref<24xf32>
    call @k1_neg(%0, %1) : (...) -> ()
    ```
  }];
}

#endif // TFC_CODEGEN_PLAN_PASSES_TD
