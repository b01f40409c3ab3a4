// tfc's CUDA kernel library: what the threads of a block share. Shared-memory
// declarations, warp reductions and the tensor-core product, each written once
// for NVRTC and for the host device model (test/cuda_emulator/host_shim.h,
// which defines TFC_DEVICE_ON_HOST and checks every shared access for races,
// bounds and uninitialized reads).
//
// Shared memory: TFC_SHARED(T, name, N) declares a block's `__shared__ T
// name[N]` (one dimension: index it as name[row * stride + col]);
// tfc_dynamic_shared<T>() is the launch's dynamic shared memory as a T* (hold
// it in `auto`: on the host it is a checked pointer). Read an element into a
// variable of its own type (`T x = name[i];`), never into `auto`: on the host
// an element is a checked reference, read when converted.
#ifndef TFC_KERNELS_COOPERATIVE_CUH
#define TFC_KERNELS_COOPERATIVE_CUH

#ifndef TFC_DEVICE_ON_HOST
#define TFC_SHARED(T, name, N) __shared__ T name[N]
template <typename T>
__device__ __forceinline__ T* tfc_dynamic_shared() {
  extern __shared__ __align__(16) unsigned char tfc_dynamic_smem[];
  return reinterpret_cast<T*>(tfc_dynamic_smem);
}
#endif

// TFC_UNROLL before a loop of a constant trip count over a register array: fully
// unrolled, the array stays in registers (indexed at run time it would live in local
// memory, which ptxas reports as a stack frame).
#ifdef TFC_DEVICE_ON_HOST
#define TFC_UNROLL
#else
#define TFC_UNROLL _Pragma("unroll")
#endif

// ---- Warp reductions (all 32 lanes take part; every lane gets the result) ----
__device__ __forceinline__ float tfc_warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
// NaN in any lane gives NaN, as arith.maximumf (tfc_maximumf).
__device__ __forceinline__ float tfc_warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = tfc_maximumf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// ---- Tensor cores: mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16} ----
// d = a * b + c for one warp: A 16x16 (row-major fragments, four 32-bit words a
// lane, two 16-bit elements a word, the lower k in the low half), B 16x8 (two
// words a lane, pairs along k), C and D 16x8 f32 (four a lane). Lane l holds,
// with g = l / 4 and t = l % 4: a[0] = A[g][2t..2t+1], a[1] = A[g+8][2t..],
// a[2] = A[g][2t+8..], a[3] = A[g+8][2t+8..]; b[0] = B[2t..2t+1][g],
// b[1] = B[2t+8..2t+9][g]; c[0..1] = C[g][2t..2t+1], c[2..3] = C[g+8][2t..]
// (the PTX ISA's "Matrix Fragments for mma.m16n8k16 with floating point type").
// sm_80 and later.
// The PTX operand type is the only difference between bf16 and f16.
#define TFC_MMA_M16N8K16(TYPE)                                                        \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 "         \
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"         \
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                       \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),    \
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]))
template <bool kBf16>
__device__ __forceinline__ void tfc_mma_m16n8k16(float* d, const unsigned* a, const unsigned* b,
                                                 const float* c) {
#ifdef TFC_DEVICE_ON_HOST
  tfc_emu::mma_m16n8k16<kBf16>(d, a, b, c);
#else
  if (kBf16)
    TFC_MMA_M16N8K16("bf16");
  else
    TFC_MMA_M16N8K16("f16");
#endif
}
#undef TFC_MMA_M16N8K16

// ---- Tensor cores on f32 data: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 ----
// d = a * b + c with A 16x8 (a[0] = A[g][t], a[1] = A[g+8][t], a[2] = A[g][t+4],
// a[3] = A[g+8][t+4]), B 8x8 (b[0] = B[t][g], b[1] = B[t+4][g]), C and D as above; each
// operand an f32 word of which TF32 reads the sign, the exponent and 10 bits of mantissa
// (round it first: tfc_round_tf32). sm_80 and later.
__device__ __forceinline__ void tfc_mma_m16n8k8_tf32(float* d, const unsigned* a,
                                                     const unsigned* b, const float* c) {
#ifdef TFC_DEVICE_ON_HOST
  tfc_emu::mma_m16n8k8_tf32(d, a, b, c);
#else
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}

// f32 rounded to TF32 (10 bits of mantissa), to nearest with ties away from zero as
// cvt.rna.tf32.f32 does, as the bits of an f32 whose low 13 bits are zero (past the largest
// TF32 it rounds to inf); inf stays, a NaN stays a NaN in the bits TF32 reads.
__device__ __forceinline__ unsigned tfc_round_tf32(float f) {
  const unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return u | 0x00400000u;  // NaN: quiet, kept NaN
  if ((u & 0x7f800000u) == 0x7f800000u) return u;                // inf
  return (u + 0x1000u) & 0xffffe000u;
}

// Two f32 values rounded to bf16 (kBf16) or f16 and packed as one 32-bit fragment word:
// lo in the low half (the lower k), as the mma operands take them.
template <bool kBf16>
__device__ __forceinline__ unsigned tfc_pack_half2(float lo, float hi) {
  const unsigned l = kBf16 ? tfc_f32_to_bf16(lo) : tfc_f32_to_f16(lo).bits;
  const unsigned h = kBf16 ? tfc_f32_to_bf16(hi) : tfc_f32_to_f16(hi).bits;
  return l | (h << 16);
}

#endif  // TFC_KERNELS_COOPERATIVE_CUH
