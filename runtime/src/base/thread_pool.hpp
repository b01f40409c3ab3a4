// Internal: the persistent thread pool behind tfc_host_api_t.parallel_for.
#ifndef TFC_RUNTIME_SRC_THREAD_POOL_HPP_
#define TFC_RUNTIME_SRC_THREAD_POOL_HPP_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tfc/runtime/runtime.h"
#include "tfc/runtime/status.hpp"

namespace tfc::internal {

// A fixed set of worker threads that run parallelFor() jobs. The calling thread takes part
// in every job, so a pool of N threads starts N - 1 workers; with N = 1 everything runs
// inline and no thread is started.
//
// Thread-safety: parallelFor() may be called from any thread; calls from different threads
// are serialized. A parallelFor() made from inside a job (nesting) runs inline on the
// thread that made it instead of deadlocking.
class ThreadPool {
 public:
  using Fn = void (*)(void* ctx, int64_t begin, int64_t end);

  // The most threads a pool may have (TFC_CONTEXT_MAX_THREADS, runtime.h): beyond it a
  // request is refused, and the hardware default is capped to it.
  static constexpr int kMaxThreads = TFC_CONTEXT_MAX_THREADS;

  // A pool of |numThreads| threads; 0 means std::thread::hardware_concurrency() (at least
  // 1, at most kMaxThreads). A count below 0 or above kMaxThreads is TFC_INVALID_ARGUMENT,
  // naming the value and the bound; a thread the system refuses to start (too many
  // processes, no memory for its stack) is TFC_OUT_OF_MEMORY, with the threads started so
  // far stopped and joined.
  static StatusOr<std::unique_ptr<ThreadPool>> create(int numThreads);

  // As create(), for callers that pass a valid count; throws std::system_error when a
  // thread cannot be started, after stopping and joining those it started.
  explicit ThreadPool(int numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int numThreads() const { return numThreads_; }

  // Splits [0, n) into at most numThreads() contiguous chunks, each at least |grain| long
  // (except when n < grain: one chunk), runs fn(ctx, begin, end) on each, and returns when
  // all are done. n <= 0 does nothing; grain <= 0 counts as 1.
  void parallelFor(int64_t n, int64_t grain, Fn fn, void* ctx);

  // The chunk count and bounds parallelFor() uses, exposed for tests.
  static int64_t chunkCount(int64_t n, int64_t grain, int numThreads);
  static void chunkBounds(int64_t n, int64_t chunks, int64_t index, int64_t* begin,
                          int64_t* end);

 private:
  struct Job;
  void workerLoop();
  void stopWorkers();
  static void runChunks(Job* job);

  int numThreads_ = 1;
  // How long an idle worker, or the caller waiting for the workers, polls before it
  // sleeps: the gap between two kernels is often shorter than a futex wake-up
  // ($TFC_SPIN_US, default 50 microseconds; 0 sleeps at once).
  int64_t spinNanos_ = 50000;
  std::vector<std::thread> workers_;
  std::mutex submitMutex_;  // serializes parallelFor() callers
  // A job is published by storing job_ and then bumping generation_; a worker counts
  // itself in active_ before it reads job_, and the caller clears job_ before it waits for
  // active_ to drop to 0, so no worker touches a job after parallelFor() returns.
  std::atomic<uint64_t> generation_{0};
  std::atomic<Job*> job_{nullptr};
  std::atomic<int> active_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> callerSleeping_{false};
  std::mutex mutex_;  // for the sleeping sides of the condition variables only
  std::condition_variable workCv_;  // idle workers sleep here
  std::condition_variable doneCv_;  // the caller sleeps here while workers finish a job
};

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_THREAD_POOL_HPP_
