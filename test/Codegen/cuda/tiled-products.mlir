// Matrix products run tiled, a block per 64x64 tile of the result and per batch
// (launch: (ceil(N/64), ceil(M/64), batch) blocks). 16-bit operands run on tensor
// cores: the emitter instantiates kernels/gemm.cuh's tfc_gemm_tc_64x64 (bf16 or f16,
// the transposes, the batch offsets of blockIdx.z, the bias and the result's type in
// the epilogue; 128 threads), which NVRTC turns into mma.sync for sm_80. f32 operands
// run on tfc_gemm_simt_64x64 (exact f32, 256 threads), or with --cuda-tf32 on
// tfc_gemm_tf32_64x64 (tensor cores). More batches than grid.z holds
// fall back to one thread per output, with no launch shape of its own; at most 8
// rows, a GEMV (tfc_gemv). Numerics:
// test/e2e/cuda/check_cuda_kernels.py (the "tiled" cases in f32, bf16 and f16), on the
// host device model.
// REQUIRES: cuda-target
// RUN: rm -rf %t && mkdir -p %t
// RUN: tfc %s --target=cuda --cuda-arch=sm_80 --compile-to=codegen --dump-ir=%t/dump -o %t/codegen.mlir
// RUN: FileCheck %s --input-file=%t/codegen.mlir --check-prefix=LAUNCH
// RUN: FileCheck %s --input-file=%t/codegen.mlir --check-prefix=PRODUCT
// RUN: FileCheck %s --input-file=%t/dump/k0_matmul.cu --check-prefix=MATMUL
// RUN: FileCheck %s --input-file=%t/dump/k1_linear.cu --check-prefix=LINEAR
// RUN: FileCheck %s --input-file=%t/dump/k0_matmul.ptx --check-prefix=PTX
// RUN: FileCheck %s --input-file=%t/dump/k2_matmul.cu --check-prefix=F32
// RUN: FileCheck %s --input-file=%t/dump/k3_matmul.cu --check-prefix=MANY
// RUN: FileCheck %s --input-file=%t/dump/k4_matmul.cu --check-prefix=GEMV
// RUN: FileCheck %s --input-file=%t/dump/k5_linear.cu --check-prefix=GEMV2
// With --cuda-tf32, f32 products run on tensor cores through TF32 (128 threads); the GEMV,
// the per-output fallback and 16-bit products do not change.
// RUN: tfc %s --target=cuda --cuda-arch=sm_80 --cuda-tf32 --compile-to=codegen --dump-ir=%t/tf32 -o %t/tf32.mlir
// RUN: FileCheck %s --input-file=%t/tf32.mlir --check-prefix=TF32-LAUNCH
// RUN: FileCheck %s --input-file=%t/tf32.mlir --check-prefix=TF32-PRODUCT
// RUN: FileCheck %s --input-file=%t/tf32/k2_matmul.cu --check-prefix=TF32
// RUN: FileCheck %s --input-file=%t/tf32/k2_matmul.ptx --check-prefix=TF32-PTX
// RUN: FileCheck %s --input-file=%t/tf32/k4_matmul.cu --check-prefix=GEMV
// RUN: not tfc %s --cuda-tf32 -o %t/cpu.so 2>&1 | FileCheck %s --check-prefix=TF32-CPU

// LAUNCH: func.func private @k0_matmul({{.*}}tfc.cuda.launch = array<i64: 2, 2, 3, 128, 1, 1, 0>
// LAUNCH: func.func private @k1_linear({{.*}}tfc.cuda.launch = array<i64: 2, 3, 1, 128, 1, 1, 0>
// LAUNCH-NOT: tfc.cuda.spill_bytes
// LAUNCH: func.func private @k2_matmul({{.*}}tfc.cuda.launch = array<i64: 1, 2, 1, 256, 1, 1, 0>
// LAUNCH: func.func private @k3_matmul(
// LAUNCH-NOT: tfc.cuda.launch
// LAUNCH-SAME: tfc.cuda.threads = 65536
// LAUNCH: func.func private @k4_matmul({{.*}}tfc.cuda.launch = array<i64: 9, 1, 3, 32, 8, 1, 0>
// LAUNCH: func.func private @k5_linear({{.*}}tfc.cuda.launch = array<i64: 4, 1, 1, 32, 32, 1, 0>

// The products a runtime's library (cuBLASLt) may run instead, as tfc_device_matmul_t:
// types (TFC_ABI_*: f32 1, f16 2, bf16 3; bias 0 = none), transposes, tf32, 0, batch, M, N,
// K and the operands' batch strides (0: one matrix for every batch). Not the GEMVs, not the
// per-output fallback, not an operand broadcast over some batch dimensions only; batches of
// activations times one weight fold into one product of batch x M rows.
// PRODUCT: func.func private @k0_matmul({{.*}}tfc.cuda.library_product = array<i64: 3, 3, 3, 0, 0, 1, 0, 0, 3, 100, 72, 40, 4000, 2880>
// PRODUCT: func.func private @k1_linear({{.*}}tfc.cuda.library_product = array<i64: 2, 2, 2, 2, 0, 0, 0, 0, 1, 130, 72, 48, 0, 0>
// PRODUCT: func.func private @k2_matmul({{.*}}tfc.cuda.library_product = array<i64: 1, 1, 1, 0, 0, 0, 0, 0, 1, 70, 6, 8, 0, 0>
// PRODUCT: func.func private @k3_matmul(
// PRODUCT-NOT: library_product
// PRODUCT: func.func private @k6_matmul({{.*}}tfc.cuda.library_product = array<i64: 3, 3, 3, 0, 0, 0, 0, 0, 1, 32, 72, 48, 0, 0>
// PRODUCT: func.func private @k7_matmul(
// PRODUCT-NOT: library_product
// TF32-PRODUCT: func.func private @k2_matmul({{.*}}tfc.cuda.library_product = array<i64: 1, 1, 1, 0, 0, 0, 1, 0, 1, 70, 6, 8, 0, 0>

// MATMUL: const long long c0 = rest % 3LL;
// MATMUL: const auto* a = (const unsigned short*)(in0 + 0 + c0 * 4000LL);
// MATMUL: const auto* b = (const unsigned short*)(in1 + 0 + c0 * 2880LL);
// MATMUL: auto* c = out0 + z * 7200LL;
// MATMUL: tfc_gemm_tc_64x64<true, false, true>(
// MATMUL-NEXT: a, b, 100LL, 72LL, 40LL, 40LL, 40LL,
// MATMUL-NEXT: c[m * 72LL + n] = tfc_f32_to_bf16(v);

// LINEAR: tfc_gemm_tc_64x64<false, false, false>(
// LINEAR-NEXT: a, b, 130LL, 72LL, 48LL, 48LL, 72LL,
// LINEAR-NEXT: c[m * 72LL + n] = tfc_f32_to_f16(v + tfc_f16_to_f32(in2[n]));

// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

// F32: const auto* a = (in0 + 0);
// F32: tfc_gemm_simt_64x64<false, false>(
// F32-NEXT: a, b, 70LL, 6LL, 8LL, 8LL, 6LL,
// F32-NEXT: c[m * 6LL + n] = v;

// TF32-LAUNCH: func.func private @k2_matmul({{.*}}tfc.cuda.launch = array<i64: 1, 2, 1, 128, 1, 1, 0>
// TF32: tfc_gemm_tf32_64x64<false, false>(
// TF32-NEXT: a, b, 70LL, 6LL, 8LL, 8LL, 6LL,
// TF32-PTX: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// TF32-CPU: error: --cuda-tf32 applies to --target=cuda only (this is --target=cpu)

// A decode step's few rows: a GEMV, a warp a column of a transposed weight
// (block (32, 8)), or a lane a column and 32 warps down K (block (32, 32)).
// GEMV: tfc_gemv<2, true>(
// GEMV-NEXT: a, b, 72LL, 48LL, 48LL, 48LL,
// GEMV2: tfc_gemv<1, false>(
// GEMV2-NEXT: a, b, 100LL, 48LL, 48LL, 100LL,
// GEMV2-NEXT: c[m * 100LL + n] = tfc_f32_to_bf16(v + tfc_bf16_to_f32(in2[n]));

// MANY-NOT: tfc_gemm
// MANY: acc = fmaf(

func.func @f(%a: tensor<3x100x40xbf16>, %b: tensor<3x72x40xbf16>, %x: tensor<130x48xf16>,
             %w: tensor<48x72xf16>, %bias: tensor<72xf16>, %p: tensor<70x8xf32>,
             %q: tensor<8x6xf32>, %r: tensor<65536x1x2xf32>, %s: tensor<65536x2x1xf32>,
             %t: tensor<3x2x48xf32>, %u: tensor<3x72x48xf32>, %y: tensor<1x48xbf16>,
             %z: tensor<48x100xbf16>, %zb: tensor<100xbf16>, %h: tensor<2x16x48xbf16>,
             %w2: tensor<48x72xbf16>, %g: tensor<2x3x16x8xf32>, %gb: tensor<2x1x8x8xf32>)
    -> (tensor<3x100x72xbf16>, tensor<130x72xf16>, tensor<70x6xf32>, tensor<65536x1x1xf32>,
        tensor<3x2x72xf32>, tensor<1x100xbf16>, tensor<2x16x72xbf16>, tensor<2x3x16x8xf32>) {
  %0 = tfc.matmul %a, %b transpose_rhs : tensor<3x100x40xbf16>, tensor<3x72x40xbf16> -> tensor<3x100x72xbf16>
  %1 = tfc.linear %x, %w bias %bias : (tensor<130x48xf16>, tensor<48x72xf16>, tensor<72xf16>) -> tensor<130x72xf16>
  %2 = tfc.matmul %p, %q : tensor<70x8xf32>, tensor<8x6xf32> -> tensor<70x6xf32>
  %3 = tfc.matmul %r, %s : tensor<65536x1x2xf32>, tensor<65536x2x1xf32> -> tensor<65536x1x1xf32>
  %4 = tfc.matmul %t, %u transpose_rhs : tensor<3x2x48xf32>, tensor<3x72x48xf32> -> tensor<3x2x72xf32>
  %5 = tfc.linear %y, %z bias %zb : (tensor<1x48xbf16>, tensor<48x100xbf16>, tensor<100xbf16>) -> tensor<1x100xbf16>
  %6 = tfc.matmul %h, %w2 : tensor<2x16x48xbf16>, tensor<48x72xbf16> -> tensor<2x16x72xbf16>
  %7 = tfc.matmul %g, %gb : tensor<2x3x16x8xf32>, tensor<2x1x8x8xf32> -> tensor<2x3x16x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<3x100x72xbf16>, tensor<130x72xf16>, tensor<70x6xf32>, tensor<65536x1x1xf32>, tensor<3x2x72xf32>, tensor<1x100xbf16>, tensor<2x16x72xbf16>, tensor<2x3x16x8xf32>
}
