// The emulated CUDA driver end to end: tfc's embedding kernel, dumped by
// --target=cuda and built for the host by build_host_kernels.py, is loaded through
// the runtime's driver loader (TFC_CUDA_DRIVER) and launched, captured and
// replayed on fresh random inputs (emulator_test.cpp says what it checks).
// REQUIRES: cuda-target, cuda-emulator
// RUN: rm -rf %t && mkdir -p %t
// RUN: tfc %s --target=cuda --compile-to=codegen --dump-ir=%t/dump -o %t/codegen.mlir
// RUN: %python %tfc_src/test/cuda_emulator/build_host_kernels.py --dump-dir %t/dump --out %t/kernels.so | FileCheck %s --check-prefix=BUILD
// RUN: env TFC_CUDA_DRIVER=%cuda_emulator/libcuda.so.1 TFC_CUDA_EMULATOR_KERNELS=%t/kernels.so tfc-cuda-emulator-test --dump-dir %t/dump | FileCheck %s
// RUN: env TFC_CUDA_DRIVER=%cuda_emulator/libcuda.so.1 TFC_CUDA_EMULATOR_KERNELS=%t/kernels.so TFC_CUDA_EMULATOR_ARCH=sm_86 tfc-cuda-emulator-test --dump-dir %t/dump | FileCheck %s --check-prefix=ARCH
// Without the kernel object, a module does not load, and the emulator says why.
// RUN: env TFC_CUDA_DRIVER=%cuda_emulator/libcuda.so.1 TFC_CUDA_EMULATOR_KERNELS= not tfc-cuda-emulator-test --dump-dir %t/dump 2>&1 | FileCheck %s --check-prefix=NOKERNELS

// BUILD: kernels.so: 1 kernels
// CHECK: device: tfc CUDA emulator, sm_90
// CHECK-NOT: FAILED
// CHECK: emulator test: {{[0-9]+}} checks passed
// ARCH: device: tfc CUDA emulator, sm_86
// ARCH: emulator test: {{[0-9]+}} checks passed
// NOKERNELS-DAG: tfc CUDA emulator: cuModuleLoadData: TFC_CUDA_EMULATOR_KERNELS is not set
// NOKERNELS-DAG: FAILED: FAILED_PRECONDITION: cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)

func.func @f(%table: tensor<50x16xf32>, %ids: tensor<4x8xi32>) -> tensor<4x8x16xf32> {
  %0 = tfc.embedding %table, %ids : tensor<50x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
  return %0 : tensor<4x8x16xf32>
}
