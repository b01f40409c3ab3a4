// RUN: tfc-opt %s --tfc-lower-to-kernels --tfc-cpu-emit-kernels --tfc-cpu-kernel-timers | FileCheck %s
// RUN: tfc-opt %s --tfc-lower-to-kernels --tfc-cpu-emit-kernels --tfc-cpu-kernel-timers --tfc-cpu-kernel-timers | FileCheck %s --check-prefix=ONCE

// Tests that every kernel launch of an entry is bracketed by the profiling
// hooks with its launch index (a kernel launched twice gets two indices),
// that each kernel records its cost and the graph ops it computes (a fused
// kernel lists its body), and that a second run of the pass adds nothing.

// CHECK-LABEL: func.func private @k0_fused(
// CHECK-SAME:      tfc.kernel_cost = array<i64: 128, 32, 32>, tfc.kernel_ops = "fused.pointwise: exp, tanh"
// CHECK-LABEL: func.func @forward(
// CHECK:         %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    call @tfc_kernels_kernel_begin(%[[C0]]) : (i32) -> ()
// CHECK-NEXT:    call @k0_fused(
// CHECK-NEXT:    call @tfc_kernels_kernel_end(%[[C0]]) : (i32) -> ()
// CHECK:         %[[C1:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    call @tfc_kernels_kernel_begin(%[[C1]])
// CHECK-NEXT:    call @k0_fused(
// CHECK-NEXT:    call @tfc_kernels_kernel_end(%[[C1]])
// CHECK:         %[[C2:.*]] = arith.constant 2 : i32
// CHECK-NEXT:    call @tfc_kernels_kernel_begin(%[[C2]])
// CHECK-NEXT:    call @k1_neg(
// CHECK-NEXT:    call @tfc_kernels_kernel_end(%[[C2]])
// CHECK-DAG:   func.func private @tfc_kernels_kernel_begin(i32)
// CHECK-DAG:   func.func private @tfc_kernels_kernel_end(i32)

// ONCE-COUNT-3: call @tfc_kernels_kernel_begin
// ONCE-NOT:     call @tfc_kernels_kernel_begin
func.func @forward(%x: tensor<8xf32> {tfc.name = "x"}) -> tensor<8xf32> {
  %0 = tfc.fused "pointwise" (%x) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xf32>):
    %1 = tfc.exp %a : tensor<8xf32>
    %2 = tfc.tanh %1 : tensor<8xf32>
    tfc.yield %2 : tensor<8xf32>
  }
  %3 = tfc.fused "pointwise" (%0) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xf32>):
    %1 = tfc.exp %a : tensor<8xf32>
    %2 = tfc.tanh %1 : tensor<8xf32>
    tfc.yield %2 : tensor<8xf32>
  }
  %4 = tfc.neg %3 : tensor<8xf32>
  return %4 : tensor<8xf32>
}
