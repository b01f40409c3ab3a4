// tfc's CUDA kernel library: the prelude every generated kernel includes
// (`#include "tfc/prelude.cuh"`, first line of each kernel's source).
//
// What is here: the run-time error word, Philox random numbers, the 16-bit
// float types and their conversions, and small numeric helpers (tfc_dot,
// NaN-propagating max and min, integer powers). The compiler embeds this file
// at build time and hands it to NVRTC as a header (codegen/cuda/KernelLibrary.cpp);
// `tfc --dump-ir=DIR` writes it to DIR/tfc/ next to the dumped kernels, so
// that the same source also compiles as host C++ with test/cuda_emulator/host_shim.h
// (the kernel checks and the CUDA emulator). So it must stay both valid CUDA
// for NVRTC (no CUDA or C library headers: NVRTC has none) and valid host
// C++ once host_shim.h has defined the CUDA built-ins it uses.
#ifndef TFC_KERNELS_PRELUDE_CUH
#define TFC_KERNELS_PRELUDE_CUH

// The device contract: tfc_kernel_error, the codes below. A sibling include
// (both are in tfc/ wherever this file is compiled: NVRTC's headers and the
// dump dir), so that a host compile of a dumped kernel needs no -I.
#include "artifact_abi.h"

// ---- Run-time errors ----
// What the CPU's kernels report through tfc_kernels_error: the first code
// (a TFC_KERNEL_ERROR_*) a kernel reports stays in tfc_error_code, for the
// host to read after the entry (runtime/src/devices/cuda/executor.cpp finds it by
// this name).
__device__ unsigned int tfc_error_code;
__device__ __forceinline__ void tfc_report(unsigned int code) {
  atomicCAS(&tfc_error_code, 0u, code);
}

// ---- Random numbers ----
// Philox-4x32-10 (Salmon et al.), as codegen/cpu/kernels/src/random.cpp:
// key = seed, counter = (counter lo, counter hi, stream, 0). The words are
// a pure function of those, so draws do not depend on the launch.
__device__ __forceinline__ void tfc_philox(long long seed, long long counter,
                                           unsigned int stream, unsigned int* out) {
  unsigned int c0 = (unsigned int)counter, c1 = (unsigned int)((unsigned long long)counter >> 32);
  unsigned int c2 = stream, c3 = 0u;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)((unsigned long long)seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
    const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
    c1 = (unsigned int)p1; c3 = (unsigned int)p0; c0 = n0; c2 = n2;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}
// tfc_k_uniform: a float in [0, 1) of 24 bits (dropout masks).
__device__ __forceinline__ float tfc_uniform_float(long long seed, long long counter) {
  unsigned int r[4];
  tfc_philox(seed, counter, 0u, r);
  return (float)(r[0] >> 8) * (1.0f / 16777216.0f);
}
// A double in [0, 1) of 53 bits (sampling).
__device__ __forceinline__ double tfc_uniform_double(long long seed, long long counter,
                                                     unsigned int stream) {
  unsigned int r[4];
  tfc_philox(seed, counter, stream, r);
  const unsigned long long bits = ((unsigned long long)r[0] << 21) ^ (unsigned long long)(r[1] >> 11);
  return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// ---- 16-bit floats ----
// bf16 is stored as its 16 bits (unsigned short) and converted on load and
// store; arithmetic is f32.
__device__ __forceinline__ float tfc_bf16_to_f32(unsigned short b) {
  return __uint_as_float(((unsigned int)b) << 16);
}
// Round to nearest even; NaN stays a (quiet) NaN.
__device__ __forceinline__ unsigned short tfc_f32_to_bf16(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
__device__ __forceinline__ float tfc_round_bf16(float f) {
  return tfc_bf16_to_f32(tfc_f32_to_bf16(f));
}
// IEEE half precision as its 16 bits, a struct so that overloads tell it from
// bf16's unsigned short. Converted in integer arithmetic (no cuda_fp16.h), the
// same bits on the device and in a host build of this source.
struct tfc_f16 {
  unsigned short bits;
};
__device__ __forceinline__ float tfc_f16_to_f32(tfc_f16 h) {
  const unsigned int sign = ((unsigned int)h.bits & 0x8000u) << 16;
  const unsigned int exp = ((unsigned int)h.bits >> 10) & 0x1fu, man = h.bits & 0x3ffu;
  if (exp == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (man << 13));  // inf, NaN
  if (exp != 0) return __uint_as_float(sign | ((exp + 112u) << 23) | (man << 13));
  // zero or subnormal: man * 2^-24, exact in f32
  const float m = (float)man * 5.9604644775390625e-8f;
  return sign ? -m : m;
}
// Round to nearest even; overflow gives inf, NaN stays a (quiet) NaN.
__device__ __forceinline__ tfc_f16 tfc_f32_to_f16(float f) {
  const unsigned int u = __float_as_uint(f);
  const unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
  const unsigned int a = u & 0x7fffffffu;
  tfc_f16 h;
  if (a > 0x7f800000u) { h.bits = (unsigned short)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); return h; }
  if (a >= 0x477ff000u) { h.bits = (unsigned short)(sign | 0x7c00u); return h; }  // >= 65520
  if (a >= 0x38800000u) {  // normal in f16 (>= 2^-14)
    const unsigned int r = a - 0x38000000u;  // rebias 127 -> 15
    h.bits = (unsigned short)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
    return h;
  }
  if (a < 0x33000000u) { h.bits = sign; return h; }  // below half the least subnormal
  // subnormal: the significand (implicit bit restored) shifted into place, rounded
  const unsigned int e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
  const unsigned int shift = 126u - e;  // 14..24 (e in [102, 112])
  const unsigned int half = 1u << (shift - 1), rest = m & ((1u << shift) - 1u);
  unsigned int q = m >> shift;
  if (rest > half || (rest == half && (q & 1u))) ++q;
  h.bits = (unsigned short)(sign | q);
  return h;
}
__device__ __forceinline__ float tfc_round_f16(float f) {
  return tfc_f16_to_f32(tfc_f32_to_f16(f));
}
// An element as float: f32 as is, bf16 (stored as unsigned short) and f16
// widened.
__device__ __forceinline__ float tfc_as_float(float v) { return v; }
__device__ __forceinline__ float tfc_as_float(unsigned short b) { return tfc_bf16_to_f32(b); }
__device__ __forceinline__ float tfc_as_float(tfc_f16 h) { return tfc_f16_to_f32(h); }
// Stores f32 v as the element type of p, rounded to nearest even.
__device__ __forceinline__ void tfc_store(float* p, float v) { *p = v; }
__device__ __forceinline__ void tfc_store(unsigned short* p, float v) { *p = tfc_f32_to_bf16(v); }
__device__ __forceinline__ void tfc_store(tfc_f16* p, float v) { *p = tfc_f32_to_f16(v); }

// ---- Numeric helpers ----
// The dot product of N elements of x and y, accumulated in f32 in order.
template <long long N, typename A, typename B>
__device__ __forceinline__ float tfc_dot(const A* x, const B* y) {
  float s = 0.0f;
  for (long long t = 0; t < N; ++t) s = fmaf(tfc_as_float(x[t]), tfc_as_float(y[t]), s);
  return s;
}
// arith.maximumf / minimumf (the scalar printer in CudaSource.cpp calls them): NaN in either operand gives NaN.
__device__ __forceinline__ float tfc_maximumf(float a, float b) {
  return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
}
__device__ __forceinline__ float tfc_minimumf(float a, float b) {
  return (a != a || b != b) ? __int_as_float(0x7fc00000) : fminf(a, b);
}
__device__ __forceinline__ int tfc_ipow_i32(int b, int e) {
  int r = 1;
  if (e < 0) return (b == 1) ? 1 : (b == -1) ? ((e & 1) ? -1 : 1) : 0;
  while (e) { if (e & 1) r *= b; b *= b; e >>= 1; }
  return r;
}
__device__ __forceinline__ long long tfc_ipow_i64(long long b, long long e) {
  long long r = 1;
  if (e < 0) return (b == 1) ? 1 : (b == -1) ? ((e & 1) ? -1 : 1) : 0;
  while (e) { if (e & 1) r *= b; b *= b; e >>= 1; }
  return r;
}

// ---- The rest of the library ----
// Included here so that every kernel source, and the emulator's host build
// (which includes the prelude once for all kernels), sees the same library.
#include "cooperative.cuh"
#include "gemm.cuh"
#include "row.cuh"
#include "attention.cuh"
#include "reduce.cuh"

#endif  // TFC_KERNELS_PRELUDE_CUH
