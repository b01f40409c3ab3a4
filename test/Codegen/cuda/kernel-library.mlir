// The CUDA kernel library (codegen/cuda/kernels) reaches NVRTC as headers: a
// generated kernel's source includes the prelude instead of pasting it, and its
// run-time error is the device contract's name (tfc_kernel_error in
// artifact_abi.h). --dump-ir writes the embedded headers to tfc/, byte for byte
// the files in the tree (so the build embeds what is reviewed), and a dumped
// kernel compiles as host C++ with host_shim.h and no -I, as
// test/e2e/cuda/check_cuda_kernels.py compiles it.
// REQUIRES: cuda-target
// RUN: rm -rf %t && mkdir -p %t
// RUN: tfc %s --target=cuda --compile-to=codegen --dump-ir=%t/dump -o %t/codegen.mlir
// RUN: FileCheck %s --input-file=%t/dump/k0_embedding.cu
// RUN: cmp %t/dump/tfc/prelude.cuh %tfc_src/codegen/cuda/kernels/prelude.cuh
// RUN: cmp %t/dump/tfc/cooperative.cuh %tfc_src/codegen/cuda/kernels/cooperative.cuh
// RUN: cmp %t/dump/tfc/gemm.cuh %tfc_src/codegen/cuda/kernels/gemm.cuh
// RUN: cmp %t/dump/tfc/row.cuh %tfc_src/codegen/cuda/kernels/row.cuh
// RUN: cmp %t/dump/tfc/artifact_abi.h %tfc_src/runtime/include/tfc/artifact_abi.h
// RUN: c++ -std=c++17 -fsyntax-only -include %tfc_src/test/cuda_emulator/host_shim.h -x c++ %t/dump/k0_embedding.cu
// A header that would end the raw string embedding it is refused at build time.
// RUN: echo ')tfc_embed"' > %t/bad.cuh
// RUN: not cmake -DINPUT=%t/bad.cuh -DNAME=bad.cuh -DOUTPUT=%t/bad.inc -P %tfc_src/codegen/cuda/kernels/embed.cmake 2>&1 | FileCheck %s --check-prefix=DELIMITER
// RUN: not ls %t/bad.inc

// CHECK: {{^}}#include "tfc/prelude.cuh"{{$}}
// CHECK-NOT: tfc_error_code
// CHECK-NOT: #define
// CHECK: extern "C" __global__ void k0_embedding(
// CHECK: tfc_report(TFC_KERNEL_ERROR_EMBEDDING_ID);
// DELIMITER: CMake Error at {{.*}}embed.cmake
// DELIMITER: bad.cuh'
// DELIMITER-NEXT: contains ')tfc_embed"', the end of the raw string

func.func @f(%table: tensor<50x16xf32>, %ids: tensor<4x8xi32>) -> tensor<4x8x16xf32> {
  %0 = tfc.embedding %table, %ids : tensor<50x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
  return %0 : tensor<4x8x16xf32>
}
