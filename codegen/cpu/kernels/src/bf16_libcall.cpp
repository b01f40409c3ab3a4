// The compiler-runtime routine LLVM calls to round an f32 to bf16 (`fptrunc float to
// bfloat`) where the CPU has no instruction for it: without AVX512-BF16 (AVX2 machines,
// `tfc --cpu=x86-64-v3` and below). compiler-rt defines it, libgcc only since GCC 13, so an
// artifact linked on Debian 12 (GCC 12's libgcc) would fail to load with "undefined symbol:
// __truncsfbf2". Every artifact links this library, so it defines the routine itself, with
// compiler-rt's semantics: round to nearest even, a NaN stays a NaN (made quiet). The bf16
// bits are returned where the x86-64 ABI returns a 16-bit float, the low half of xmm0, as a
// _Float16 is.
#include <cstdint>
#include <cstring>

extern "C" _Float16 __truncsfbf2(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  uint16_t bits;
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN: quiet, sign and top payload kept
  } else {
    bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  _Float16 out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
