// RUN: tfc-opt %s --tfc-cpu-launch-parallel | FileCheck %s

// Tests that a call of a part (tfc.parallel = [n, grain]) becomes a store of
// its arguments (but begin and end) into a stack slot and a launch through
// tfc_kernels_parallel_for, and that the trampoline unpacks the slot and calls
// the part on [begin, end).

// CHECK-LABEL: llvm.func internal @k0_add(
// CHECK-SAME:      %[[A:.*]]: !llvm.ptr, %[[C:.*]]: !llvm.ptr, %[[S:.*]]: f32)
// CHECK:         %[[SLOT:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, ptr, f32)>
// CHECK:         %[[F0:.*]] = llvm.getelementptr %[[SLOT]][0, 0]
// CHECK:         llvm.store %[[A]], %[[F0]]
// CHECK:         %[[F1:.*]] = llvm.getelementptr %[[SLOT]][0, 1]
// CHECK:         llvm.store %[[C]], %[[F1]]
// CHECK:         %[[F2:.*]] = llvm.getelementptr %[[SLOT]][0, 2]
// CHECK:         llvm.store %[[S]], %[[F2]]
// CHECK:         %[[N:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK:         %[[G:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK:         %[[T:.*]] = llvm.mlir.addressof @k0_add_part0_task
// CHECK:         llvm.call @tfc_kernels_parallel_for(%[[N]], %[[G]], %[[T]], %[[SLOT]])
// CHECK-NOT:     llvm.call @k0_add_part0(
// CHECK:       llvm.func internal @k0_add_part0(
// CHECK-NOT:     tfc.parallel
// CHECK:       llvm.func internal @k0_add_part0_task(%[[CTX:.*]]: !llvm.ptr, %[[B:.*]]: i64, %[[E:.*]]: i64)
// CHECK:         %[[P0:.*]] = llvm.getelementptr %[[CTX]][0, 0]
// CHECK:         %[[V0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[P2:.*]] = llvm.getelementptr %[[CTX]][0, 2]
// CHECK:         %[[V2:.*]] = llvm.load %[[P2]] : !llvm.ptr -> f32
// CHECK:         llvm.call @k0_add_part0(%[[V0]], %{{.*}}, %[[V2]], %[[B]], %[[E]])
// CHECK:       llvm.func @tfc_kernels_parallel_for(i64, i64, !llvm.ptr, !llvm.ptr)
llvm.func internal @k0_add(%a: !llvm.ptr, %c: !llvm.ptr, %s: f32) {
  %b = llvm.mlir.constant(0 : i64) : i64
  %e = llvm.mlir.constant(32 : i64) : i64
  llvm.call @k0_add_part0(%a, %c, %s, %b, %e) : (!llvm.ptr, !llvm.ptr, f32, i64, i64) -> ()
  llvm.return
}
llvm.func internal @k0_add_part0(%a: !llvm.ptr, %c: !llvm.ptr, %s: f32, %b: i64, %e: i64) attributes {tfc.parallel = array<i64: 32, 4>} {
  llvm.return
}
