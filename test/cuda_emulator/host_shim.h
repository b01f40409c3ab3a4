// The CUDA device model on the host: what tfc's CUDA kernels (codegen/cuda/kernels and the
// generated sources) need from CUDA to run as plain C++, exactly enough to check them
// against NumPy and to run whole CUDA artifacts on machines without a GPU (the kernel checks
// in test/e2e/cuda and the emulated driver in this folder).
//
// Blocks run cooperatively: every thread of a block is a fiber with its own stack, and the
// threads run in turn on the calling OS thread until each finishes or waits for the others.
// What that gives a kernel, as on a GPU:
//  - threadIdx/blockIdx/blockDim/gridDim in three dimensions; warps of 32 consecutive
//    threads in x-major order.
//  - __syncthreads(), __syncwarp(mask), and the warp collectives __shfl_sync,
//    __shfl_xor_sync, __shfl_up_sync, __shfl_down_sync, __ballot_sync, __any_sync,
//    __all_sync; a thread that leaves the kernel while others wait at a barrier, lanes that
//    meet different collectives, and a block where no thread can go on are reported.
//  - Shared memory through the kernel library's TFC_SHARED(T, name, N) and
//    tfc_dynamic_shared<T>() (codegen/cuda/kernels/prelude.cuh): every access is checked.
//    An index outside the array, a read of shared memory that no thread of the block wrote,
//    and a data race are reported with the kernel's name, the array, the index and the
//    threads. A race is two threads touching the same byte between the same two barriers,
//    at least one of them writing, unless both are lanes of one warp and a full-warp
//    __syncwarp() lies between them (CUDA's rule since Volta's independent scheduling).
//  - The tensor-core product mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32
//    (tfc_emu::mma_m16n8k16, which the library's tfc_mma_m16n8k16 calls here), by the PTX ISA's
//    fragment layouts ("Matrix Fragments for mma.m16n8k16 with floating point type"),
//    products exact and the k-sum in f32 in k order; and its TF32 form
//    mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (tfc_emu::mma_m16n8k8_tf32).
// Global memory is plain host memory and is not checked for races. Launches report a fault
// (tfc_emu::launch returns its message) instead of crashing; a fault stops the launch.
//
// A kernel is written once for both compilers. On the host, TFC_DEVICE_ON_HOST is defined;
// shared arrays are 1-D objects whose elements are read by conversion and written by
// assignment, so `T x = tile[i];` and `tile[i] = x;` work in both, while `auto x = tile[i];`
// would keep a reference on the host and must not be used.
#pragma once
#define TFC_DEVICE_ON_HOST 1

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <sys/mman.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

struct tfc_dim3 {
  unsigned x, y, z;
};
inline tfc_dim3 blockIdx{0, 0, 0}, threadIdx{0, 0, 0};
inline tfc_dim3 blockDim{1, 1, 1}, gridDim{1, 1, 1};
constexpr int warpSize = 32;

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
// Fibers switch only at barriers and collectives, so a read-modify-write is atomic here.
inline unsigned atomicCAS(unsigned* address, unsigned compare, unsigned value) {
  unsigned old = *address;
  if (old == compare) *address = value;
  return old;
}
inline unsigned atomicAdd(unsigned* address, unsigned value) {
  const unsigned old = *address;
  *address = old + value;
  return old;
}
// Blocks run one after another and global memory is plain host memory: every write is
// visible to the next block already.
inline void __threadfence() {}
inline int __popc(unsigned v) { return __builtin_popcount(v); }
using std::max;
using std::min;

// ---- Fibers: one stack a thread, switched by hand. ----
#if defined(__x86_64__)
// tfc_emu_fiber_switch(&save, next): saves the callee-saved registers, the SSE and x87
// control words and the stack pointer into *save, and resumes the fiber whose stack pointer
// is next. Hidden and weak: each object that includes this header may carry a copy.
asm(R"(
  .text
  .weak tfc_emu_fiber_switch
  .hidden tfc_emu_fiber_switch
  .type tfc_emu_fiber_switch, @function
tfc_emu_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tfc_emu_fiber_switch, .-tfc_emu_fiber_switch

  .weak tfc_emu_fiber_start
  .hidden tfc_emu_fiber_start
  .type tfc_emu_fiber_start, @function
tfc_emu_fiber_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size tfc_emu_fiber_start, .-tfc_emu_fiber_start
)");
extern "C" void tfc_emu_fiber_switch(void** save, void* next);
extern "C" void tfc_emu_fiber_start();
#endif

namespace tfc_emu {

// What a launch reports: the first fault stops it.
struct Fault {
  std::string message;
};

class Fiber {
 public:
  static constexpr size_t kStackBytes = 256 << 10;

  Fiber() = default;
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;
  ~Fiber() {
    if (stack_ != nullptr) munmap(stack_, kStackBytes);
  }

  // Prepares the fiber to run entry(arg) from the top of its stack at the next resume().
  void reset(void (*entry)(void*), void* arg) {
    if (stack_ == nullptr) {
      void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
      if (p == MAP_FAILED) {
        std::fprintf(stderr, "tfc CUDA device model: no memory for a thread's stack\n");
        std::abort();
      }
      mprotect(p, 4096, PROT_NONE);  // a guard page below the stack
      stack_ = static_cast<char*>(p);
    }
#if defined(__x86_64__)
    // The frame tfc_emu_fiber_switch pops: control words, r15, r14, r13 (entry), r12 (arg),
    // rbx, rbp, and the return address tfc_emu_fiber_start, which calls entry(arg) on a
    // 16-byte aligned stack.
    auto* top = reinterpret_cast<uint64_t*>(stack_ + kStackBytes - 64);
    uint64_t* sp = top - 8;
    uint32_t controls[2] = {0x1F80u, 0x037Fu};  // MXCSR and x87 defaults
    std::memcpy(&sp[0], controls, 8);
    sp[1] = 0;                                         // r15
    sp[2] = 0;                                         // r14
    sp[3] = reinterpret_cast<uint64_t>(entry);         // r13
    sp[4] = reinterpret_cast<uint64_t>(arg);           // r12
    sp[5] = 0;                                         // rbx
    sp[6] = 0;                                         // rbp
    sp[7] = reinterpret_cast<uint64_t>(&tfc_emu_fiber_start);
    sp_ = sp;
#else
    entry_ = entry;
    arg_ = arg;
    getcontext(&context_);
    context_.uc_stack.ss_sp = stack_ + 4096;
    context_.uc_stack.ss_size = kStackBytes - 4096;
    context_.uc_link = nullptr;
    auto self = reinterpret_cast<uintptr_t>(this);  // makecontext passes int arguments
    makecontext(&context_, reinterpret_cast<void (*)()>(&trampoline), 2,
                static_cast<unsigned>(self), static_cast<unsigned>(self >> 32));
#endif
  }

  // Runs the fiber until it calls yieldTo(this) back.
  void resume() {
#if defined(__x86_64__)
    tfc_emu_fiber_switch(&scheduler_, sp_);
#else
    swapcontext(&scheduler_, &context_);
#endif
  }
  // From inside the fiber: back to whoever resumed it.
  void suspend() {
#if defined(__x86_64__)
    tfc_emu_fiber_switch(&sp_, scheduler_);
#else
    swapcontext(&context_, &scheduler_);
#endif
  }

 private:
  char* stack_ = nullptr;
#if defined(__x86_64__)
  void* sp_ = nullptr;
  void* scheduler_ = nullptr;
#else
  static void trampoline(unsigned lo, unsigned hi) {
    auto* self = reinterpret_cast<Fiber*>(static_cast<uintptr_t>(lo) |
                                          (static_cast<uintptr_t>(hi) << 32));
    self->entry_(self->arg_);
  }
  void (*entry_)(void*) = nullptr;
  void* arg_ = nullptr;
  ucontext_t context_{};
  ucontext_t scheduler_{};
#endif
};

// ---- The block being run. ----

enum class Wait { kRunnable, kBarrier, kWarp, kDone };

struct Thread;
using Resolver = void (*)(Thread* const* lanes, unsigned mask);

struct Thread {
  Fiber fiber;
  tfc_dim3 index{0, 0, 0};
  int linear = 0;  // x + y * blockDim.x + z * blockDim.x * blockDim.y
  Wait wait = Wait::kRunnable;
  // The warp collective this lane waits at: its name, mask, operands and result.
  const char* op = nullptr;
  unsigned mask = 0;
  const void* in = nullptr;
  const void* in2 = nullptr;
  const void* in3 = nullptr;
  void* out = nullptr;
  int lane_arg = 0;
  Resolver resolve = nullptr;
};

struct Block {
  const char* kernel = "";
  std::vector<Thread*> threads;  // by linear index
  int arrived = 0;               // threads waiting at __syncthreads
  int done = 0;
  uint64_t epoch = 1;            // barriers passed, over the whole process (never reused)
  uint64_t generation = 1;       // blocks run, over the whole process
  std::vector<uint64_t> warp_syncs;  // full-warp __syncwarp()s of each warp in this block
  Thread* current = nullptr;
  std::vector<unsigned char> dynamic_shared;
  bool faulted = false;
  std::string fault;
  void (*body)(void*) = nullptr;
  void* body_arg = nullptr;
};

inline Block& block() {
  static Block instance;
  return instance;
}

inline std::string threadName(const Thread& t) {
  char text[64];
  std::snprintf(text, sizeof text, "thread (%u,%u,%u)", t.index.x, t.index.y, t.index.z);
  return text;
}

// Stops the launch: unwinds the current thread to its fiber's entry.
[[noreturn]] inline void fault(const std::string& what) {
  Block& b = block();
  char where[96];
  std::snprintf(where, sizeof where, " (block (%u,%u,%u))", blockIdx.x, blockIdx.y, blockIdx.z);
  throw Fault{"kernel " + std::string(b.kernel) + ": " + what + where};
}

// Back to the scheduler until the block lets this thread go on.
inline void park(Wait why) {
  Thread* self = block().current;
  self->wait = why;
  self->fiber.suspend();
  // The scheduler set threadIdx and current back before resuming.
}

// ---- Warp collectives. ----

inline int warpOf(const Thread& t) { return t.linear / 32; }
inline int laneOf(const Thread& t) { return t.linear % 32; }

// Joins the warp collective |op| of the lanes in |mask|; the last lane to arrive runs
// |resolve| over all of them, which writes every lane's result.
inline void warpCollective(const char* op, unsigned mask, const void* in, void* out,
                           Resolver resolve, int lane_arg = 0, const void* in2 = nullptr,
                           const void* in3 = nullptr) {
  Block& b = block();
  Thread* self = b.current;
  const int lane = laneOf(*self);
  if ((mask & (1u << lane)) == 0)
    fault(std::string(op) + ": the mask does not include the calling lane, " + threadName(*self));
  self->op = op;
  self->mask = mask;
  self->in = in;
  self->in2 = in2;
  self->in3 = in3;
  self->out = out;
  self->lane_arg = lane_arg;
  self->resolve = resolve;
  const int base = warpOf(*self) * 32;
  Thread* lanes[32] = {};
  bool all_here = true;
  for (int l = 0; l < 32; ++l) {
    if ((mask & (1u << l)) == 0) continue;
    const size_t i = static_cast<size_t>(base + l);
    if (i >= b.threads.size())
      fault(std::string(op) + ": the mask names lane " + std::to_string(l) +
            ", which this block does not have");
    Thread* t = b.threads[i];
    lanes[l] = t;
    if (t == self) continue;
    if (t->wait == Wait::kDone)
      fault(std::string(op) + ": " + threadName(*t) + " left the kernel, and the mask of " +
            threadName(*self) + " includes it");
    if (t->wait == Wait::kWarp) {
      if (t->op != op || t->mask != mask)
        fault("lanes of one warp meet different collectives: " + threadName(*t) + " waits at " +
              t->op + ", " + threadName(*self) + " at " + op);
      continue;
    }
    all_here = false;
  }
  if (!all_here) {
    park(Wait::kWarp);
    return;  // the last lane resolved it and woke this one
  }
  resolve(lanes, mask);
  for (Thread* t : lanes) {
    if (t != nullptr && t != self) t->wait = Wait::kRunnable;
  }
  self->wait = Wait::kRunnable;
}

template <typename T>
void resolveShuffle(Thread* const* lanes, unsigned mask) {
  // lane_arg: the source lane, already computed by the caller within its segment; a source
  // outside the mask reads an unspecified value on a GPU, so it is refused here.
  for (int l = 0; l < 32; ++l) {
    if ((mask & (1u << l)) == 0) continue;
    const int src = lanes[l]->lane_arg;
    if (src < 0 || src > 31 || (mask & (1u << src)) == 0)
      fault(std::string(lanes[l]->op) + ": " + threadName(*lanes[l]) + " reads lane " +
            std::to_string(src) + ", which is not in the mask");
    std::memcpy(lanes[l]->out, lanes[src]->in, sizeof(T));
  }
}

inline void resolveVote(Thread* const* lanes, unsigned mask) {
  unsigned ballot = 0;
  for (int l = 0; l < 32; ++l)
    if ((mask & (1u << l)) != 0 && *static_cast<const int*>(lanes[l]->in) != 0) ballot |= 1u << l;
  for (int l = 0; l < 32; ++l)
    if ((mask & (1u << l)) != 0) *static_cast<unsigned*>(lanes[l]->out) = ballot;
}

inline void resolveSyncwarp(Thread* const* lanes, unsigned mask) {
  // Memory ordering among the lanes: only a full-warp __syncwarp() orders their shared
  // accesses for the race check (a partial one is not modeled, so it does not hide races).
  if (mask == 0xFFFFFFFFu) ++block().warp_syncs[static_cast<size_t>(warpOf(*lanes[0]))];
}

// The source lane of a shuffle within segments of |width| lanes.
template <typename T>
T shuffle(const char* op, unsigned mask, T value, int src) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shuffles move 4- or 8-byte values");
  T result;
  warpCollective(op, mask, &value, &result, &resolveShuffle<T>, src);
  return result;
}

inline int checkedWidth(const char* op, int width) {
  if (width <= 0 || width > 32 || (width & (width - 1)) != 0)
    fault(std::string(op) + ": width " + std::to_string(width) + " is not a power of two <= 32");
  return width;
}

// ---- mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 ----

// A 16-bit float's value: bf16 is the high half of an f32; f16 is IEEE binary16.
inline float halfBitsToFloat(uint16_t h, bool bf16) {
  if (bf16) return __uint_as_float(static_cast<unsigned>(h) << 16);
  const unsigned sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant != 0 ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  return sign != 0 ? -v : v;
}

// D = A * B + C (16 x kK times kK x 8, products exact, the k-sum in f32 in k order) into
// each lane's D fragment: d[0..1] = D[g][2t..2t+1], d[2..3] = D[g+8][2t..].
template <int kK>
void writeMmaResult(Thread* const* lanes, const float (&a)[16][kK], const float (&bm)[kK][8],
                    const float (&c)[16][8]) {
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane >> 2, tig = lane & 3;
    auto* rd = static_cast<float*>(lanes[lane]->out);
    for (int i = 0; i < 4; ++i) {
      const int row = group + (i >= 2 ? 8 : 0), col = tig * 2 + (i & 1);
      float sum = c[row][col];
      for (int k = 0; k < kK; ++k) sum += a[row][k] * bm[k][col];
      rd[i] = sum;
    }
  }
}

template <bool kBf16>
void resolveMma(Thread* const* lanes, unsigned mask) {
  if (mask != 0xFFFFFFFFu) fault("mma.sync: all 32 lanes of the warp must take part");
  // Gather the fragments into A (16x16, row-major), B (16x8, k by n) and C (16x8).
  float a[16][16], bm[16][8], c[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane >> 2, tig = lane & 3;
    const auto* ra = static_cast<const unsigned*>(lanes[lane]->in);
    const auto* rb = static_cast<const unsigned*>(lanes[lane]->in2);
    const auto* rc = static_cast<const float*>(lanes[lane]->in3);
    for (int i = 0; i < 8; ++i) {  // a0..a7: two per 32-bit register, low half first
      const int row = group + ((i / 2) % 2) * 8;
      const int col = tig * 2 + (i & 1) + (i >= 4 ? 8 : 0);
      a[row][col] = halfBitsToFloat(static_cast<uint16_t>(ra[i / 2] >> ((i & 1) * 16)), kBf16);
    }
    for (int i = 0; i < 4; ++i) {  // b0..b3
      const int k = tig * 2 + (i & 1) + (i >= 2 ? 8 : 0);
      bm[k][group] = halfBitsToFloat(static_cast<uint16_t>(rb[i / 2] >> ((i & 1) * 16)), kBf16);
    }
    for (int i = 0; i < 4; ++i) c[group + (i >= 2 ? 8 : 0)][tig * 2 + (i & 1)] = rc[i];
  }
  writeMmaResult<16>(lanes, a, bm, c);
}

// d = a * b + c over the warp's fragments (the layouts above); bf16 or f16 operands.
template <bool kBf16>
void mma_m16n8k16(float d[4], const unsigned a[4], const unsigned b[2], const float c[4]) {
  unsigned ra[4] = {a[0], a[1], a[2], a[3]}, rb[2] = {b[0], b[1]};
  float rc[4] = {c[0], c[1], c[2], c[3]}, rd[4];
  warpCollective(kBf16 ? "mma.sync.m16n8k16.bf16" : "mma.sync.m16n8k16.f16", 0xFFFFFFFFu, ra,
                 rd, &resolveMma<kBf16>, 0, rb, rc);
  for (int i = 0; i < 4; ++i) d[i] = rd[i];
}

// ---- mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 ----
// A 16x8 (a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]), B 8x8 (b0 =
// B[t][g], b1 = B[t+4][g]), C and D as m16n8k16's; the operands' low 13 bits are not read
// (TF32 keeps 10 bits of mantissa), products exact and the k-sum in f32 in k order.
inline float tf32Value(unsigned bits) { return __uint_as_float(bits & 0xFFFFE000u); }

inline void resolveMmaTf32(Thread* const* lanes, unsigned mask) {
  if (mask != 0xFFFFFFFFu) fault("mma.sync: all 32 lanes of the warp must take part");
  float a[16][8], bm[8][8], c[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane >> 2, tig = lane & 3;
    const auto* ra = static_cast<const unsigned*>(lanes[lane]->in);
    const auto* rb = static_cast<const unsigned*>(lanes[lane]->in2);
    const auto* rc = static_cast<const float*>(lanes[lane]->in3);
    for (int i = 0; i < 4; ++i) a[group + (i & 1) * 8][tig + (i >= 2 ? 4 : 0)] = tf32Value(ra[i]);
    for (int i = 0; i < 2; ++i) bm[tig + i * 4][group] = tf32Value(rb[i]);
    for (int i = 0; i < 4; ++i) c[group + (i >= 2 ? 8 : 0)][tig * 2 + (i & 1)] = rc[i];
  }
  writeMmaResult<8>(lanes, a, bm, c);
}

inline void mma_m16n8k8_tf32(float d[4], const unsigned a[4], const unsigned b[2],
                             const float c[4]) {
  unsigned ra[4] = {a[0], a[1], a[2], a[3]}, rb[2] = {b[0], b[1]};
  float rc[4] = {c[0], c[1], c[2], c[3]}, rd[4];
  warpCollective("mma.sync.m16n8k8.tf32", 0xFFFFFFFFu, ra, rd, &resolveMmaTf32, 0, rb, rc);
  for (int i = 0; i < 4; ++i) d[i] = rd[i];
}

// ---- Shared memory. ----

// One byte's history within the current block: who wrote it last and who read it, at
// which barrier epoch, and how many full-warp syncs of the accessor's warp had passed.
struct ShadowByte {
  uint64_t write_epoch = 0, read_epoch = 0, generation = 0;
  uint32_t write_sync = 0, read_sync = 0;
  int32_t writer = -1;
  int32_t reader = -1;  // -2: several threads
  int32_t reader_warp = -1;  // -2: several warps
};

class SharedRegion {
 public:
  SharedRegion(const char* name, size_t bytes) : name_(name), bytes_(bytes) {}

  // Storage for a region whose size comes with the launch (dynamic shared memory).
  void bind(unsigned char* data, size_t bytes) {
    data_ = data;
    bytes_ = bytes;
    if (shadow_.size() < bytes) shadow_.resize(bytes);
    generation_ = 0;
  }
  void own(size_t bytes) {
    owned_.assign(bytes, 0xFF);
    bind(owned_.data(), bytes);
  }

  unsigned char* access(size_t offset, size_t size, size_t index, size_t count, bool write) {
    Block& b = block();
    if (data_ == nullptr) own(bytes_);
    if (generation_ != b.generation) {
      // A new block: its shared memory holds garbage until written.
      std::memset(data_, 0xFF, bytes_);
      generation_ = b.generation;
    }
    if (index >= count || offset + size > bytes_)
      fault(std::string("shared memory out of bounds: ") + threadName(*b.current) + " " +
            (write ? "wrote " : "read ") + name_ + "[" + std::to_string(index) + "], which has " +
            std::to_string(count) + " elements");
    const Thread& self = *b.current;
    const int32_t me = self.linear;
    const int32_t warp = warpOf(self);
    const uint32_t sync = static_cast<uint32_t>(b.warp_syncs[static_cast<size_t>(warp)]);
    for (size_t i = offset; i < offset + size; ++i) {
      ShadowByte& s = shadow_[i];
      if (s.generation != b.generation) s = ShadowByte{0, 0, b.generation, 0, 0, -1, -1, -1};
      // Ordered with the other thread's access: a barrier since, or a full-warp sync since
      // when both are lanes of one warp.
      auto ordered = [&](int32_t other, int32_t other_warp, uint64_t epoch, uint32_t other_sync) {
        return epoch != b.epoch || other == me || (other_warp == warp && other_sync < sync);
      };
      if (s.writer >= 0 && !ordered(s.writer, s.writer / 32, s.write_epoch, s.write_sync))
        race(write ? "wrote" : "read", index, s.writer, "wrote");
      if (write) {
        if (s.reader != -1 && s.read_epoch == b.epoch && s.reader != me &&
            !(s.reader_warp == warp && s.read_sync < sync))
          race("wrote", index, s.reader, "read");
        s.writer = me;
        s.write_epoch = b.epoch;
        s.write_sync = sync;
      } else {
        if (s.writer < 0)
          fault("read of uninitialized shared memory: " + threadName(self) + " read " + name_ +
                "[" + std::to_string(index) + "], which no thread of the block wrote");
        if (s.read_epoch != b.epoch || s.reader == -1) {
          s.reader = me;
          s.reader_warp = warp;
          s.read_sync = sync;
        } else {
          if (s.reader != me) s.reader = -2;
          if (s.reader_warp != warp) s.reader_warp = -2;
        }
        s.read_epoch = b.epoch;
        s.read_sync = std::max(s.read_sync, sync);
      }
    }
    return data_ + offset;
  }

 private:
  [[noreturn]] void race(const char* did, size_t index, int32_t other, const char* other_did) {
    const Block& b = block();
    std::string who = other == -2 ? std::string("other threads")
                                  : threadName(*b.threads[static_cast<size_t>(other)]);
    fault("shared memory race on " + std::string(name_) + "[" + std::to_string(index) + "]: " +
          threadName(*b.current) + " " + did + " it and " + who + " " + other_did +
          " it between the same two barriers (a __syncthreads() missing?)");
  }

  const char* name_;
  size_t bytes_;
  unsigned char* data_ = nullptr;
  std::vector<unsigned char> owned_;
  std::vector<ShadowByte> shadow_;
  uint64_t generation_ = 0;
};

// One element of a shared array: reads by conversion, writes by assignment.
template <typename T>
class SharedRef {
 public:
  SharedRef(SharedRegion* region, size_t index, size_t count)
      : region_(region), index_(index), count_(count) {}
  operator T() const { return load(); }
  T load() const {
    T value;
    std::memcpy(&value, region_->access(index_ * sizeof(T), sizeof(T), index_, count_, false),
                sizeof(T));
    return value;
  }
  const SharedRef& operator=(const T& value) const {
    std::memcpy(region_->access(index_ * sizeof(T), sizeof(T), index_, count_, true), &value,
                sizeof(T));
    return *this;
  }
  const SharedRef& operator=(const SharedRef& other) const { return *this = other.load(); }
  const SharedRef& operator+=(const T& v) const { return *this = load() + v; }
  const SharedRef& operator-=(const T& v) const { return *this = load() - v; }
  const SharedRef& operator*=(const T& v) const { return *this = load() * v; }

 private:
  SharedRegion* region_;
  size_t index_, count_;
};

// A pointer into shared memory: [] and + as a T* (the element count bounds the indices).
template <typename T>
class SharedPtr {
 public:
  SharedPtr(SharedRegion* region, size_t first, size_t count)
      : region_(region), first_(first), count_(count) {}
  SharedRef<T> operator[](long long i) const {
    // An index before the start is out of bounds too: it wraps to a huge one.
    return SharedRef<T>(region_, first_ + static_cast<size_t>(i), first_ + count_);
  }
  SharedRef<T> operator*() const { return (*this)[0]; }
  SharedPtr operator+(long long n) const {
    return SharedPtr(region_, first_ + static_cast<size_t>(n), count_ - static_cast<size_t>(n));
  }

 private:
  SharedRegion* region_;
  size_t first_, count_;
};

// A __shared__ T name[N].
template <typename T, size_t N>
class SharedArray {
 public:
  explicit SharedArray(const char* name) : region_(name, N * sizeof(T)) {}
  SharedRef<T> operator[](long long i) { return SharedRef<T>(&region_, static_cast<size_t>(i), N); }
  SharedPtr<T> operator+(long long n) { return SharedPtr<T>(&region_, 0, N) + n; }

 private:
  SharedRegion region_;
};

inline SharedRegion& dynamicRegion() {
  static SharedRegion region("dynamic shared memory", 0);
  return region;
}

// ---- Launches. ----

inline void threadMain(void* arg) {
  auto* self = static_cast<Thread*>(arg);
  Block& b = block();
  try {
    b.body(b.body_arg);
  } catch (const Fault& f) {
    if (!b.faulted) {
      b.faulted = true;
      b.fault = f.message;
    }
  }
  self->wait = Wait::kDone;
  ++b.done;
  // A barrier that can no longer fill is reported by the scheduler.
  self->fiber.suspend();
  std::abort();  // never resumed
}

inline void setCurrent(Thread* t) {
  block().current = t;
  threadIdx = t->index;
}

// Runs one block; returns false with b.fault set on a fault.
inline bool runBlock(Block& b) {
  for (;;) {
    bool progressed = false;
    for (Thread* t : b.threads) {
      if (t->wait != Wait::kRunnable) continue;
      setCurrent(t);
      t->fiber.resume();
      progressed = true;
      if (b.faulted) return false;
      if (t->wait == Wait::kBarrier && b.arrived + b.done == static_cast<int>(b.threads.size())) {
        if (b.done != 0) break;  // reported below
        b.arrived = 0;
        ++b.epoch;
        for (Thread* u : b.threads) u->wait = Wait::kRunnable;
      }
    }
    if (b.done == static_cast<int>(b.threads.size())) return true;
    if (b.arrived != 0 && b.arrived + b.done == static_cast<int>(b.threads.size())) {
      for (Thread* t : b.threads) {
        if (t->wait == Wait::kDone) {
          b.fault = "kernel " + std::string(b.kernel) + ": " + threadName(*t) +
                    " left the kernel while " + std::to_string(b.arrived) +
                    " threads wait at __syncthreads() (a barrier in divergent code)";
          break;
        }
      }
      return false;
    }
    if (!progressed) {
      std::string waits;
      for (Thread* t : b.threads) {
        if (t->wait == Wait::kWarp) {
          waits = threadName(*t) + " waits at " + t->op;
          break;
        }
      }
      b.fault = "kernel " + std::string(b.kernel) + ": no thread of the block can go on (" +
                waits + "; lanes of its mask wait elsewhere)";
      return false;
    }
  }
}

struct LaunchConfig {
  const char* kernel = "";
  tfc_dim3 grid{1, 1, 1}, block{1, 1, 1};
  size_t dynamic_shared = 0;
};

// Runs body() as every thread of every block of |config|, the blocks one after another;
// returns an empty string, or the first fault's message. Not reentrant.
template <typename Body>
std::string launch(const LaunchConfig& config, Body&& body) {
  static std::vector<Thread*> pool;  // threads (and their stacks) kept from launch to launch
  Block& b = block();
  const unsigned long long threads =
      1ull * config.block.x * config.block.y * config.block.z;
  if (threads == 0 || threads > 1024 || config.grid.x == 0 || config.grid.y == 0 ||
      config.grid.z == 0)
    return "kernel " + std::string(config.kernel) + ": invalid launch shape";
  while (pool.size() < threads) pool.push_back(new Thread);
  b.kernel = config.kernel;
  b.threads.assign(pool.begin(), pool.begin() + static_cast<long>(threads));
  b.warp_syncs.assign((threads + 31) / 32, 0);
  b.dynamic_shared.assign(config.dynamic_shared, 0xFF);
  dynamicRegion().bind(b.dynamic_shared.data(), config.dynamic_shared);
  using BodyType = std::remove_reference_t<Body>;
  b.body = [](void* f) { (*static_cast<BodyType*>(f))(); };
  b.body_arg = &body;
  b.faulted = false;
  b.fault.clear();
  gridDim = config.grid;
  blockDim = config.block;
  for (unsigned z = 0; z < config.grid.z; ++z)
    for (unsigned y = 0; y < config.grid.y; ++y)
      for (unsigned x = 0; x < config.grid.x; ++x) {
        blockIdx = {x, y, z};
        ++b.generation;
        ++b.epoch;
        b.arrived = 0;
        b.done = 0;
        std::fill(b.warp_syncs.begin(), b.warp_syncs.end(), 0);
        for (unsigned long long i = 0; i < threads; ++i) {
          Thread* t = b.threads[i];
          t->linear = static_cast<int>(i);
          t->index = {static_cast<unsigned>(i % config.block.x),
                      static_cast<unsigned>(i / config.block.x % config.block.y),
                      static_cast<unsigned>(i / (1ull * config.block.x * config.block.y))};
          t->wait = Wait::kRunnable;
          t->fiber.reset(&threadMain, t);
        }
        if (!runBlock(b)) {
          b.current = nullptr;
          return b.fault;
        }
      }
  b.current = nullptr;
  return "";
}

}  // namespace tfc_emu

// ---- The CUDA built-ins over the block model. ----

inline void __syncthreads() {
  tfc_emu::Block& b = tfc_emu::block();
  ++b.arrived;
  tfc_emu::park(tfc_emu::Wait::kBarrier);
}
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) {
  tfc_emu::warpCollective("__syncwarp", mask, nullptr, nullptr, &tfc_emu::resolveSyncwarp);
}
template <typename T>
T __shfl_sync(unsigned mask, T value, int src, int width = 32) {
  width = tfc_emu::checkedWidth("__shfl_sync", width);
  const int lane = tfc_emu::laneOf(*tfc_emu::block().current);
  return tfc_emu::shuffle("__shfl_sync", mask, value, (lane & ~(width - 1)) + (src & (width - 1)));
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  width = tfc_emu::checkedWidth("__shfl_xor_sync", width);
  const int lane = tfc_emu::laneOf(*tfc_emu::block().current);
  int src = lane ^ lane_mask;
  if (src >= ((lane & ~(width - 1)) + width)) src = lane;  // past the segment: own value
  return tfc_emu::shuffle("__shfl_xor_sync", mask, value, src);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  width = tfc_emu::checkedWidth("__shfl_down_sync", width);
  const int lane = tfc_emu::laneOf(*tfc_emu::block().current);
  const int src = lane + static_cast<int>(delta);
  const bool inside = (src & ~(width - 1)) == (lane & ~(width - 1));
  return tfc_emu::shuffle("__shfl_down_sync", mask, value, inside ? src : lane);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  width = tfc_emu::checkedWidth("__shfl_up_sync", width);
  const int lane = tfc_emu::laneOf(*tfc_emu::block().current);
  const int src = lane - static_cast<int>(delta);
  const bool inside = src >= (lane & ~(width - 1));
  return tfc_emu::shuffle("__shfl_up_sync", mask, value, inside ? src : lane);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  unsigned ballot = 0;
  tfc_emu::warpCollective("__ballot_sync", mask, &predicate, &ballot, &tfc_emu::resolveVote);
  return ballot;
}
inline int __any_sync(unsigned mask, int predicate) {
  unsigned ballot = 0;
  tfc_emu::warpCollective("__any_sync", mask, &predicate, &ballot, &tfc_emu::resolveVote);
  return ballot != 0;
}
inline int __all_sync(unsigned mask, int predicate) {
  unsigned ballot = 0;
  tfc_emu::warpCollective("__all_sync", mask, &predicate, &ballot, &tfc_emu::resolveVote);
  return ballot == mask;
}

// The kernel library's shared-memory declarations (prelude.cuh) on the host.
#define TFC_SHARED(T, name, N) static tfc_emu::SharedArray<T, (N)> name(#name)
template <typename T>
tfc_emu::SharedPtr<T> tfc_dynamic_shared() {
  return tfc_emu::SharedPtr<T>(&tfc_emu::dynamicRegion(), 0,
                               tfc_emu::block().dynamic_shared.size() / sizeof(T));
}
