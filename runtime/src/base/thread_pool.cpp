#include "base/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <system_error>

namespace tfc::internal {

namespace {
// True on a thread while it runs chunks of a job, so that a nested parallelFor() runs inline.
thread_local bool tlsInsideJob = false;
}  // namespace

struct ThreadPool::Job {
  Fn fn;
  void* ctx;
  int64_t n;
  int64_t chunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
};

ThreadPool::ThreadPool(int numThreads) {
  if (numThreads <= 0) {
    numThreads = std::min(static_cast<int>(std::thread::hardware_concurrency()), kMaxThreads);
  }
  numThreads_ = std::max(1, numThreads);
  if (const char* spin = std::getenv("TFC_SPIN_US")) {
    char* end = nullptr;
    long long us = std::strtoll(spin, &end, 10);
    if (end != spin && us >= 0 && us <= 1000000) spinNanos_ = us * 1000;
  }
  try {
    workers_.reserve(static_cast<size_t>(numThreads_ - 1));
    for (int i = 1; i < numThreads_; ++i) workers_.emplace_back([this] { workerLoop(); });
  } catch (...) {
    // A throwing constructor runs no destructor: without this the started workers would
    // stay joinable (std::terminate) or wait for work for ever.
    stopWorkers();
    throw;
  }
}

ThreadPool::~ThreadPool() { stopWorkers(); }

void ThreadPool::stopWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  workCv_.notify_all();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  workers_.clear();
}

StatusOr<std::unique_ptr<ThreadPool>> ThreadPool::create(int numThreads) {
  if (numThreads < 0 || numThreads > kMaxThreads) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "num_threads is %d: it must be from 1 to %d (0 means all cores)",
                         numThreads, kMaxThreads);
  }
  const int wanted =
      numThreads > 0
          ? numThreads
          : std::max(1, std::min(static_cast<int>(std::thread::hardware_concurrency()),
                                 kMaxThreads));
  try {
    return std::make_unique<ThreadPool>(numThreads);
  } catch (const std::system_error& error) {
    return Status::error(TFC_OUT_OF_MEMORY,
                         "cannot start %d threads: %s (the system's limit on processes or "
                         "memory; ask for fewer threads)",
                         wanted, error.what());
  } catch (const std::bad_alloc&) {
    return Status::error(TFC_OUT_OF_MEMORY, "cannot start %d threads: out of memory", wanted);
  }
}

int64_t ThreadPool::chunkCount(int64_t n, int64_t grain, int numThreads) {
  if (n <= 0) return 0;
  if (grain <= 0) grain = 1;
  int64_t byGrain = std::max<int64_t>(1, n / grain);
  return std::min<int64_t>(byGrain, std::max(1, numThreads));
}

void ThreadPool::chunkBounds(int64_t n, int64_t chunks, int64_t index, int64_t* begin,
                             int64_t* end) {
  int64_t base = n / chunks;
  int64_t extra = n % chunks;  // the first |extra| chunks get one more element
  *begin = index * base + std::min(index, extra);
  *end = *begin + base + (index < extra ? 1 : 0);
}

void ThreadPool::runChunks(Job* job) {
  bool wasInside = tlsInsideJob;
  tlsInsideJob = true;
  for (;;) {
    int64_t index = job->next.fetch_add(1, std::memory_order_relaxed);
    if (index >= job->chunks) break;
    int64_t begin = 0, end = 0;
    chunkBounds(job->n, job->chunks, index, &begin, &end);
    job->fn(job->ctx, begin, end);
    job->done.fetch_add(1);  // seq_cst: ordered with callerSleeping_ (parallelFor)
  }
  tlsInsideJob = wasInside;
}

namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls |done| for about |nanos| nanoseconds; true as soon as it holds.
template <typename Done>
bool spinUntil(Done done, int64_t nanos) {
  if (nanos <= 0) return done();
  auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (done()) return true;
    cpuRelax();
    if (i % 64 == 0 && std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - start)
                               .count() > nanos) {
      return done();
    }
  }
}

}  // namespace

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    auto fresh = [&] { return stop_.load() || generation_.load() != seen; };
    if (!spinUntil(fresh, spinNanos_)) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      workCv_.wait(lock, fresh);
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_.load();
    active_.fetch_add(1);
    Job* job = job_.load();
    if (job != nullptr) {
      runChunks(job);  // a finished job has no chunks left
      if (callerSleeping_.load()) {
        std::lock_guard<std::mutex> lock(mutex_);
        doneCv_.notify_all();
      }
    }
    active_.fetch_sub(1);
  }
}

void ThreadPool::parallelFor(int64_t n, int64_t grain, Fn fn, void* ctx) {
  int64_t chunks = chunkCount(n, grain, numThreads_);
  if (chunks == 0) return;
  if (chunks == 1 || workers_.empty() || tlsInsideJob) {
    fn(ctx, 0, n);
    return;
  }
  std::lock_guard<std::mutex> submit(submitMutex_);
  Job job;
  job.fn = fn;
  job.ctx = ctx;
  job.n = n;
  job.chunks = chunks;
  job_.store(&job);
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    // Under the lock: a worker between its last check and its wait would miss it.
    std::lock_guard<std::mutex> lock(mutex_);
    workCv_.notify_all();
  }
  runChunks(&job);
  auto finished = [&] { return job.done.load() == chunks; };
  if (!spinUntil(finished, spinNanos_)) {
    std::unique_lock<std::mutex> lock(mutex_);
    callerSleeping_.store(true);
    doneCv_.wait(lock, finished);
    callerSleeping_.store(false);
  }
  // No worker may still hold |job| (it lives on this stack): unpublish it, then wait for
  // those that took it before.
  job_.store(nullptr);
  while (!spinUntil([&] { return active_.load() == 0; }, spinNanos_)) {
    std::this_thread::yield();
  }
}

}  // namespace tfc::internal
