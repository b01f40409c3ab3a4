// Runs tfc's generated CUDA C++ kernels on the host, so that their arithmetic
// and indexing are checked against NumPy on a machine without a GPU. The
// CUDA built-ins the kernels use are plain C++ here; the caller walks every
// (block, thread) of a small grid in turn, which exercises the grid-stride
// loops the same way a GPU's scheduling would (kernels keep no shared state).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>

struct tfc_dim3 {
  unsigned x, y, z;
};
static tfc_dim3 blockIdx{0, 0, 0}, threadIdx{0, 0, 0};
static tfc_dim3 blockDim{1, 1, 1}, gridDim{1, 1, 1};

#define __global__
#define __device__
#define __forceinline__ inline

inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline unsigned atomicCAS(unsigned *address, unsigned compare, unsigned value) {
  unsigned old = *address;
  if (old == compare)
    *address = value;
  return old;
}
using std::max;
using std::min;
