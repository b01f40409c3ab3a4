// RUN: not tfc-opt %s --tfc-lower-to-kernels=target=tpu 2>&1 | FileCheck %s --check-prefix=LOWER
// RUN: not tfc-opt %s --tfc-fuse=target=tpu 2>&1 | FileCheck %s --check-prefix=FUSE
// RUN: tfc-opt %s --tfc-lower-to-kernels=target=cpu | FileCheck %s --check-prefix=CPU

// Tests that the target-neutral passes name an unknown target and the ones
// this build has, and record the target they planned for.

// LOWER: error: tfc-lower-to-kernels: unknown target 'tpu' (this build knows cpu{{.*}})
// FUSE: error: tfc-fuse: unknown target 'tpu' (this build knows cpu{{.*}})
// CPU: module attributes {tfc.target = "cpu"}

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tfc.neg %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
