// Tests of the thread pool behind tfc_host_api_t.parallel_for: every index exactly once in
// contiguous chunks, across thread counts, sizes and grains; reuse; nesting; n = 0.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "base/thread_pool.hpp"

namespace tfc::internal {
namespace {

struct Coverage {
  std::vector<std::atomic<int>> hits;
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  explicit Coverage(int64_t n) : hits(static_cast<size_t>(n > 0 ? n : 0)) {}
  static void fn(void* ctx, int64_t begin, int64_t end) {
    auto* self = static_cast<Coverage*>(ctx);
    for (int64_t i = begin; i < end; ++i) self->hits[static_cast<size_t>(i)]++;
    std::lock_guard<std::mutex> lock(self->mutex);
    self->chunks.emplace_back(begin, end);
  }
};

TEST(ThreadPoolTest, CoversEveryIndexExactlyOnceInContiguousChunks) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.numThreads(), threads);
    for (int64_t n : {1, 2, 3, 7, 64, 100, 1000, 12345}) {
      for (int64_t grain : {0, 1, 3, 64, 1000, 100000}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " n " + std::to_string(n) +
                     " grain " + std::to_string(grain));
        Coverage coverage(n);
        pool.parallelFor(n, grain, Coverage::fn, &coverage);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(coverage.hits[static_cast<size_t>(i)].load(), 1);
        int64_t expectedChunks = ThreadPool::chunkCount(n, grain, threads);
        ASSERT_EQ(static_cast<int64_t>(coverage.chunks.size()), expectedChunks);
        ASSERT_LE(expectedChunks, threads);
        for (auto [begin, end] : coverage.chunks) {
          ASSERT_LT(begin, end);
          if (expectedChunks > 1) {
            ASSERT_GE(end - begin, grain);
          }
        }
      }
    }
  }
}

TEST(ThreadPoolTest, ChunkBoundsPartitionTheRange) {
  for (int64_t n : {1, 5, 17, 1000}) {
    for (int64_t chunks = 1; chunks <= std::min<int64_t>(n, 9); ++chunks) {
      int64_t expectedBegin = 0;
      for (int64_t i = 0; i < chunks; ++i) {
        int64_t begin = 0, end = 0;
        ThreadPool::chunkBounds(n, chunks, i, &begin, &end);
        EXPECT_EQ(begin, expectedBegin);
        EXPECT_GE(end - begin, n / chunks);
        EXPECT_LE(end - begin, n / chunks + 1);
        expectedBegin = end;
      }
      EXPECT_EQ(expectedBegin, n);
    }
  }
}

TEST(ThreadPoolTest, NothingToDoReturnsAtOnce) {
  ThreadPool pool(4);
  int calls = 0;
  auto fn = [](void* ctx, int64_t, int64_t) { ++*static_cast<int*>(ctx); };
  pool.parallelFor(0, 1, fn, &calls);
  pool.parallelFor(-5, 1, fn, &calls);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(ThreadPool::chunkCount(0, 1, 4), 0);
}

TEST(ThreadPoolTest, ReusedAcrossManyCalls) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  auto fn = [](void* ctx, int64_t begin, int64_t end) {
    int64_t local = 0;
    for (int64_t i = begin; i < end; ++i) local += i;
    static_cast<std::atomic<int64_t>*>(ctx)->fetch_add(local);
  };
  for (int call = 0; call < 5000; ++call) {
    sum = 0;
    int64_t n = 1 + call % 97;
    pool.parallelFor(n, 1, fn, &sum);
    ASSERT_EQ(sum.load(), n * (n - 1) / 2) << "call " << call;
  }
}

TEST(ThreadPoolTest, UsesMoreThanOneThread) {
  ThreadPool pool(4);
  struct Seen {
    std::mutex mutex;
    std::set<std::thread::id> ids;
  } seen;
  auto fn = [](void* ctx, int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    auto* self = static_cast<Seen*>(ctx);
    std::lock_guard<std::mutex> lock(self->mutex);
    self->ids.insert(std::this_thread::get_id());
  };
  pool.parallelFor(4, 1, fn, &seen);
  EXPECT_GE(seen.ids.size(), 2u);
}

TEST(ThreadPoolTest, NestedCallsRunInline) {
  ThreadPool pool(3);
  struct Outer {
    ThreadPool* pool;
    Coverage* inner;
  };
  Coverage inner(3 * 50);
  Outer outer{&pool, &inner};
  auto outerFn = [](void* ctx, int64_t begin, int64_t end) {
    auto* o = static_cast<Outer*>(ctx);
    for (int64_t i = begin; i < end; ++i) {
      struct Slice {
        Coverage* coverage;
        int64_t offset;
      } slice{o->inner, i * 50};
      o->pool->parallelFor(50, 1, [](void* c, int64_t b, int64_t e) {
        auto* s = static_cast<Slice*>(c);
        Coverage::fn(s->coverage, s->offset + b, s->offset + e);
      }, &slice);
    }
  };
  pool.parallelFor(3, 1, outerFn, &outer);
  for (auto& hit : inner.hits) EXPECT_EQ(hit.load(), 1);
}

TEST(ThreadPoolTest, ConcurrentCallersAreSerialized) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int call = 0; call < 200; ++call) {
        Coverage coverage(100);
        pool.parallelFor(100, 5, Coverage::fn, &coverage);
        for (auto& hit : coverage.hits) {
          if (hit.load() != 1) ++failures;
        }
      }
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPoolTest, DefaultIsHardwareConcurrency) {
  ThreadPool pool(0);
  unsigned hardware = std::thread::hardware_concurrency();
  EXPECT_EQ(pool.numThreads(),
            hardware == 0 ? 1 : std::min(static_cast<int>(hardware), ThreadPool::kMaxThreads));
}

// Issue 29: num_threads = 10**6 started threads until the system refused one.
TEST(ThreadPoolTest, CountsOutsideTheBoundAreRefused) {
  for (int threads : {-1, ThreadPool::kMaxThreads + 1, 1000000}) {
    auto pool = ThreadPool::create(threads);
    ASSERT_FALSE(pool.ok()) << threads;
    EXPECT_EQ(pool.status().code(), TFC_INVALID_ARGUMENT);
    std::string message = pool.status().message();
    EXPECT_NE(message.find("num_threads is " + std::to_string(threads)), std::string::npos)
        << message;
    EXPECT_NE(message.find(std::to_string(ThreadPool::kMaxThreads)), std::string::npos)
        << message;
  }
  auto pool = ThreadPool::create(3);
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  EXPECT_EQ((*pool)->numThreads(), 3);
}

// Issue 29: when the system refuses a thread (here: no address space left for its stack),
// std::thread throws; the pool used to leave the threads it had started joinable (an abort,
// or in Python a deadlock). Now: a status, and the started threads stopped and joined. In a
// child process, whose address-space limit the test lowers; alarm() ends a hang.
TEST(ThreadPoolTest, AThreadTheSystemRefusesIsAStatusNotAnAbort) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(20);
    long pages = 0;
    if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(statm, "%ld", &pages) != 1) pages = 0;
      std::fclose(statm);
    }
    if (pages <= 0) ::_exit(3);
    // Room for a few threads' stacks (8 MiB each by default), not for 200.
    const rlim_t limit = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGESIZE) + (32 << 20);
    struct rlimit rl = {limit, limit};
    if (::setrlimit(RLIMIT_AS, &rl) != 0) ::_exit(4);
    auto pool = ThreadPool::create(200);
    if (pool.ok()) ::_exit(5);
    if (pool.status().code() != TFC_OUT_OF_MEMORY) ::_exit(6);
    std::string message = pool.status().message();
    if (message.find("cannot start 200 threads") == std::string::npos &&
        message.find("out of memory") == std::string::npos) {
      ::_exit(7);
    }
    // The started threads were joined and their stacks freed: a small pool starts and runs.
    auto small = ThreadPool::create(2);
    if (!small.ok()) ::_exit(8);
    Coverage coverage(100);
    (*small)->parallelFor(100, 1, Coverage::fn, &coverage);
    for (auto& hit : coverage.hits) {
      if (hit.load() != 1) ::_exit(9);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                 << " (SIGABRT: an abort; SIGALRM: a hang)";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's check that failed (see the test)";
}

}  // namespace
}  // namespace tfc::internal
