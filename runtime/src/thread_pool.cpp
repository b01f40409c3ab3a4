#include "thread_pool.hpp"

#include <algorithm>
#include <atomic>

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
  if (numThreads <= 0) numThreads = static_cast<int>(std::thread::hardware_concurrency());
  numThreads_ = std::max(1, numThreads);
  workers_.reserve(static_cast<size_t>(numThreads_ - 1));
  for (int i = 1; i < numThreads_; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  workCv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
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
    job->done.fetch_add(1, std::memory_order_acq_rel);
  }
  tlsInsideJob = wasInside;
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    workCv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    Job* job = job_;
    if (job == nullptr) continue;  // woke after the job was already finished
    ++activeWorkers_;
    lock.unlock();
    runChunks(job);
    lock.lock();
    if (--activeWorkers_ == 0) doneCv_.notify_all();
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    ++generation_;
  }
  workCv_.notify_all();
  runChunks(&job);
  std::unique_lock<std::mutex> lock(mutex_);
  // Every chunk done, and no worker still holds a pointer to |job| (it lives on our stack).
  doneCv_.wait(lock, [&] {
    return job.done.load(std::memory_order_acquire) == chunks && activeWorkers_ == 0;
  });
  job_ = nullptr;
}

}  // namespace tfc::internal
