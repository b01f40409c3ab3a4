// The communicator interface, its size-1 implementation and the loader of the MPI plugin.
#include "tfc/runtime/communicator.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/comm_plugin.h"

namespace tfc {
namespace {

const char* kindName(int kind) {
  switch (kind) {
    case TFC_COLLECTIVE_ALL_REDUCE: return "all_reduce";
    case TFC_COLLECTIVE_REDUCE_SCATTER: return "reduce_scatter";
    case TFC_COLLECTIVE_ALL_GATHER: return "all_gather";
    case TFC_COLLECTIVE_ALL_TO_ALL: return "all_to_all";
    case TFC_COLLECTIVE_BROADCAST: return "broadcast";
    case TFC_COLLECTIVE_BARRIER: return "barrier";
    default: return "collective";
  }
}

class SingleCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* transport() const override { return "single"; }

 protected:
  Status run(int kind, ReduceOp, int root, const void* send, void* recv, size_t count,
             const std::string&) override {
    if (kind == TFC_COLLECTIVE_BARRIER || kind == TFC_COLLECTIVE_BROADCAST) {
      if (kind == TFC_COLLECTIVE_BROADCAST && root != 0) {
        return Status::error(TFC_INVALID_ARGUMENT, "broadcast from rank %d in a world of 1",
                             root);
      }
      return Status();
    }
    // Sum and mean over one rank are the value itself.
    if (send != recv && count > 0) std::memmove(recv, send, count * sizeof(float));
    return Status();
  }
  StatusOr<std::unique_ptr<Communicator>> splitTransport(int, int) override {
    return std::unique_ptr<Communicator>(new SingleCommunicator);
  }
};

// A transport in a plugin (comm_plugin.h), wrapped in the C++ interface.
class PluginCommunicator final : public Communicator {
 public:
  PluginCommunicator(const tfc_comm_plugin_t& plugin, const char* transport)
      : plugin_(plugin), transport_(transport) {}
  ~PluginCommunicator() override {
    closeSplits();  // MPI frees a split communicator before it ends the transport
    stopAsync();    // the thread's last bucket runs before the transport closes
    plugin_.close(plugin_.impl);
  }
  int rank() const override { return plugin_.rank; }
  int size() const override { return plugin_.size; }
  const char* transport() const override { return transport_; }

 protected:
  Status run(int kind, ReduceOp op, int root, const void* send, void* recv, size_t count,
             const std::string& what) override {
    if (broken_) {
      return Status::error(TFC_FAILED_PRECONDITION,
                           "rank %d: %s%s%s: the %s communicator failed earlier and cannot be "
                           "used again",
                           plugin_.rank, kindName(kind), what.empty() ? "" : " of ",
                           what.c_str(), transport_);
    }
    char error[1024] = {0};
    int32_t rc = plugin_.run(plugin_.impl, kind, static_cast<int32_t>(op), root, send, recv,
                             count, commTimeoutSeconds(), error, sizeof(error));
    if (rc == 0) return Status();
    broken_ = true;
    return Status::error(TFC_FAILED_PRECONDITION, "%s%s%s%s%s: %s", kindName(kind),
                         what.empty() ? "" : " of ", what.c_str(), name().empty() ? "" : " in ",
                         name().c_str(), error);
  }
  Status p2p(int kind, int peer, int64_t tag, void* data, size_t bytes,
             const std::string& what) override {
    const char* verb = kind == TFC_P2P_SEND ? "send" : "recv";
    if (broken_ || plugin_.p2p == nullptr) {
      return Status::error(TFC_FAILED_PRECONDITION,
                           "rank %d: %s%s%s: the %s communicator %s", plugin_.rank, verb,
                           what.empty() ? "" : " of ", what.c_str(), transport_,
                           broken_ ? "failed earlier and cannot be used again"
                                   : "has no point-to-point messages");
    }
    char error[1024] = {0};
    int32_t rc = plugin_.p2p(plugin_.impl, kind, peer, tag, data, bytes, commTimeoutSeconds(),
                             error, sizeof(error));
    if (rc == 0) return Status();
    broken_ = true;
    return Status::error(TFC_FAILED_PRECONDITION, "%s%s%s%s%s: %s", verb,
                         what.empty() ? "" : " of ", what.c_str(), name().empty() ? "" : " in ",
                         name().c_str(), error);
  }
  bool runsOnAnyThread() const override {
    return plugin_.thread_serialized != 0 && !splitOrSplitOff();
  }
  StatusOr<std::unique_ptr<Communicator>> splitTransport(int color, int key) override {
    tfc_comm_plugin_t child{};
    char error[1024] = {0};
    if (plugin_.split(plugin_.impl, color, key, &child, error, sizeof(error)) != 0) {
      return Status::error(TFC_FAILED_PRECONDITION, "%s", error);
    }
    return std::unique_ptr<Communicator>(new PluginCommunicator(child, transport_));
  }

 public:
  void markFailed() override {
    if (plugin_.mark_failed != nullptr) plugin_.mark_failed(plugin_.impl);
  }

 private:
  tfc_comm_plugin_t plugin_;
  const char* transport_;
  bool broken_ = false;
};

// The folder of the running executable, for the plugin next to it (bin/../lib).
std::string executableDir() {
  std::vector<char> buf(PATH_MAX + 1, '\0');
  ssize_t n = readlink("/proc/self/exe", buf.data(), PATH_MAX);
  if (n <= 0) return "";
  std::string path(buf.data(), static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

StatusOr<std::unique_ptr<Communicator>> openMpiPlugin() {
  // TFC_COMM_MPI_PLUGIN names the file; else bin/../lib next to the executable (the build tree
  // and an installed tree alike), else the loader's search path.
  std::vector<std::string> candidates;
  const char* named = std::getenv("TFC_COMM_MPI_PLUGIN");
  if (named != nullptr && *named != '\0') {
    candidates.push_back(named);
  } else {
    std::string dir = executableDir();
    if (!dir.empty()) candidates.push_back(dir + "/../lib/libtfc_comm_mpi.so");
    candidates.push_back("libtfc_comm_mpi.so");
  }
  std::string tried;
  for (const std::string& path : candidates) {
    // RTLD_GLOBAL: Open MPI loads its own components, which look up libmpi's symbols globally.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      tried += "\n  " + path + ": " + (why ? why : "not found");
      continue;
    }
    auto open = reinterpret_cast<tfc_comm_plugin_open_fn_t>(dlsym(handle, TFC_COMM_PLUGIN_SYMBOL));
    if (open == nullptr) {
      return Status::error(TFC_FAILED_PRECONDITION,
                           "%s is not a tfc communicator plugin (no %s; a plugin of another "
                           "tfc version?)",
                           path.c_str(), TFC_COMM_PLUGIN_SYMBOL);
    }
    tfc_comm_plugin_t plugin{};
    char error[1024] = {0};
    if (open(&plugin, error, sizeof(error)) != 0) {
      return Status::error(TFC_FAILED_PRECONDITION, "%s: %s", path.c_str(), error);
    }
    if (plugin.version != TFC_COMM_PLUGIN_VERSION) {
      return Status::error(TFC_FAILED_PRECONDITION,
                           "%s: communicator plugin version %u, this runtime needs %u",
                           path.c_str(), plugin.version, TFC_COMM_PLUGIN_VERSION);
    }
    // The handle stays open: the communicator lives until exit.
    return std::unique_ptr<Communicator>(new PluginCommunicator(plugin, "mpi"));
  }
  return Status::error(TFC_FAILED_PRECONDITION,
                       "this process runs under mpirun but the MPI communicator plugin could "
                       "not be loaded (tfc was built without MPI? install Open MPI with "
                       "scripts/install-deps.sh and rebuild, or set TFC_COMM_MPI_PLUGIN); "
                       "tried:%s",
                       tried.c_str());
}

bool launchedByMpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return true;
  }
  return false;
}


using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

// The buckets: their flat buffers (kept from step to step, by tag: the same buckets come back
// every step, and a fresh allocation of the gradients' size would page-fault each time), the
// queue of the communication thread, and the statistics.
struct Communicator::Async {
  struct Bucket {
    std::vector<float> data;
    ReduceOp op = ReduceOp::kSum;
    std::string what;
    bool pending = false;  // started, not yet waited for
    bool done = false;
    Status status;
  };
  std::mutex mu;
  std::condition_variable cv;  // queue changes, buckets done
  std::thread thread;
  bool stop = false;
  bool running = false;  // the thread is inside run()
  std::deque<Bucket*> queue;
  std::map<int64_t, Bucket> buckets;
  Stats stats;
};


Communicator::Communicator() : async_(new Async) {}

Communicator::~Communicator() {
  // A transport that has a thread stopped it in its own destructor (stopAsync, which also
  // prints the statistics: rank() and size() cannot be called from here).
  {
    std::lock_guard<std::mutex> lock(async_->mu);
    async_->stop = true;
  }
  async_->cv.notify_all();
  if (async_->thread.joinable()) async_->thread.join();
}

void Communicator::stopAsync() {
  {
    std::lock_guard<std::mutex> lock(async_->mu);
    if (async_->stop) return;
    async_->stop = true;
  }
  async_->cv.notify_all();
  if (async_->thread.joinable()) async_->thread.join();
  const char* env = std::getenv("TFC_COMM_STATS");
  if (env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0 && size() > 1) {
    const Stats s = async_->stats;
    std::fprintf(stderr,
                 "tfc comm stats: rank %d of %d%s%s: %lld collectives (%lld buckets), %.1f MB; "
                 "%.3f s in the transport, %.3f s exposed (blocking calls and waits), %.3f s "
                 "copying buckets%s\n",
                 rank(), size(), name_.empty() ? "" : " in ", name_.c_str(),
                 static_cast<long long>(s.collectives), static_cast<long long>(s.buckets),
                 s.bytes / 1e6, s.commSeconds, s.exposedSeconds, s.copySeconds,
                 s.messages == 0 ? ""
                                 : ("; " + std::to_string(s.messages) +
                                    " point-to-point messages (in the MB and the times)")
                                       .c_str());
  }
}

StatusOr<Communicator*> Communicator::split(int color, int key, const std::string& name) {
  auto made = splitTransport(color, key);
  if (!made.ok()) {
    return Status::error(made.status().code(), "making %s: %s", name.c_str(),
                         made.status().message());
  }
  std::unique_ptr<Communicator> child = std::move(made).value();
  child->name_ = name;
  child->isSplit_ = true;
  splits_.push_back(std::move(child));
  return splits_.back().get();
}

Communicator::Stats Communicator::stats() const {
  std::lock_guard<std::mutex> lock(async_->mu);
  return async_->stats;
}

Status Communicator::runBlocking(int kind, ReduceOp op, int root, const void* send, void* recv,
                                 size_t count, const std::string& what) {
  const Clock::time_point start = Clock::now();
  {
    // After the buckets already started (every rank calls them in the same order).
    std::unique_lock<std::mutex> lock(async_->mu);
    async_->cv.wait(lock, [&] { return async_->queue.empty() && !async_->running; });
  }
  Status status = run(kind, op, root, send, recv, count, what);
  const double seconds = secondsSince(start);
  std::lock_guard<std::mutex> lock(async_->mu);
  Stats& s = async_->stats;
  s.collectives++;
  s.bytes += kind == TFC_COLLECTIVE_BROADCAST ? count : count * sizeof(float);
  s.commSeconds += seconds;
  s.exposedSeconds += seconds;
  return status;
}

Status Communicator::startAllReduce(int64_t tag, int n, const float* const* send,
                                    const int64_t* counts, ReduceOp op,
                                    const std::string& what) {
  Async& a = *async_;
  size_t total = 0;
  for (int i = 0; i < n; ++i) total += static_cast<size_t>(counts[i]);
  std::unique_lock<std::mutex> lock(a.mu);
  Async::Bucket& bucket = a.buckets[tag];
  if (bucket.pending) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "gradient bucket %lld started twice without a wait (a compiler bug)",
                         static_cast<long long>(tag));
  }
  lock.unlock();  // the thread never touches a bucket that is not queued
  const Clock::time_point copyStart = Clock::now();
  bucket.data.resize(total);
  float* flat = bucket.data.data();
  for (int i = 0; i < n; ++i) {
    if (counts[i] > 0) std::memcpy(flat, send[i], static_cast<size_t>(counts[i]) * sizeof(float));
    flat += counts[i];
  }
  const double copySeconds = secondsSince(copyStart);
  bucket.op = op;
  bucket.what = what;
  bucket.pending = true;
  bucket.done = false;
  bucket.status = Status();
  lock.lock();
  a.stats.copySeconds += copySeconds;
  a.stats.buckets++;
  a.stats.collectives++;
  a.stats.bytes += static_cast<double>(total) * sizeof(float);
  if (!runsOnAnyThread() || size() == 1) {
    // In place, on this thread (a world of one: nothing to overlap).
    lock.unlock();
    const Clock::time_point start = Clock::now();
    Status status = run(TFC_COLLECTIVE_ALL_REDUCE, op, 0, bucket.data.data(),
                        bucket.data.data(), total, what);
    const double seconds = secondsSince(start);
    lock.lock();
    bucket.status = std::move(status);
    bucket.done = true;
    a.stats.commSeconds += seconds;
    a.stats.exposedSeconds += seconds;
    return Status();
  }
  if (!a.thread.joinable()) {
    a.thread = std::thread([this] {
      Async& as = *async_;
      std::unique_lock<std::mutex> guard(as.mu);
      for (;;) {
        as.cv.wait(guard, [&] { return as.stop || !as.queue.empty(); });
        if (as.queue.empty()) return;  // stopping, nothing left
        Async::Bucket* b = as.queue.front();
        as.queue.pop_front();
        as.running = true;
        guard.unlock();
        const Clock::time_point start = Clock::now();
        Status status = run(TFC_COLLECTIVE_ALL_REDUCE, b->op, 0, b->data.data(), b->data.data(),
                            b->data.size(), b->what);
        const double seconds = secondsSince(start);
        guard.lock();
        as.running = false;
        b->status = std::move(status);
        b->done = true;
        as.stats.commSeconds += seconds;
        as.cv.notify_all();
      }
    });
  }
  a.queue.push_back(&bucket);
  lock.unlock();
  a.cv.notify_all();
  return Status();
}

Status Communicator::waitAllReduce(int64_t tag, int n, float* const* recv,
                                   const int64_t* counts) {
  Async& a = *async_;
  const Clock::time_point start = Clock::now();
  std::unique_lock<std::mutex> lock(a.mu);
  auto it = a.buckets.find(tag);
  if (it == a.buckets.end() || !it->second.pending) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "gradient bucket %lld waited for but not started (a compiler bug, or "
                         "its start failed)",
                         static_cast<long long>(tag));
  }
  Async::Bucket& bucket = it->second;
  a.cv.wait(lock, [&] { return bucket.done; });
  a.stats.exposedSeconds += secondsSince(start);
  bucket.pending = false;
  Status status = std::move(bucket.status);
  bucket.status = Status();
  lock.unlock();
  if (!status.ok()) return status;
  size_t total = 0;
  for (int i = 0; i < n; ++i) total += static_cast<size_t>(counts[i]);
  if (total != bucket.data.size()) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "gradient bucket %lld: waited for %zu floats, started with %zu (a "
                         "compiler bug)",
                         static_cast<long long>(tag), total, bucket.data.size());
  }
  const Clock::time_point copyStart = Clock::now();
  const float* flat = bucket.data.data();
  for (int i = 0; i < n; ++i) {
    if (counts[i] > 0) std::memcpy(recv[i], flat, static_cast<size_t>(counts[i]) * sizeof(float));
    flat += counts[i];
  }
  const double copySeconds = secondsSince(copyStart);
  lock.lock();
  a.stats.copySeconds += copySeconds;
  return Status();
}

Status Communicator::allReduce(const float* send, float* recv, size_t count, ReduceOp op,
                               const std::string& what) {
  return runBlocking(TFC_COLLECTIVE_ALL_REDUCE, op, 0, send, recv, count, what);
}
Status Communicator::reduceScatter(const float* send, float* recv, size_t count, ReduceOp op,
                                   const std::string& what) {
  return runBlocking(TFC_COLLECTIVE_REDUCE_SCATTER, op, 0, send, recv, count, what);
}
Status Communicator::allGather(const float* send, float* recv, size_t count,
                               const std::string& what) {
  if (size() == 1) return runBlocking(TFC_COLLECTIVE_ALL_REDUCE, ReduceOp::kSum, 0, send, recv, count, what);
  return runBlocking(TFC_COLLECTIVE_ALL_GATHER, ReduceOp::kSum, 0, send, recv, count, what);
}
Status Communicator::allToAll(const float* send, float* recv, size_t count,
                              const std::string& what) {
  if (size() == 1) return runBlocking(TFC_COLLECTIVE_ALL_REDUCE, ReduceOp::kSum, 0, send, recv, count, what);
  return runBlocking(TFC_COLLECTIVE_ALL_TO_ALL, ReduceOp::kSum, 0, send, recv, count, what);
}
Status Communicator::broadcast(void* data, size_t bytes, int root, const std::string& what) {
  return runBlocking(TFC_COLLECTIVE_BROADCAST, ReduceOp::kSum, root, nullptr, data, bytes, what);
}
Status Communicator::barrier(const std::string& what) {
  return runBlocking(TFC_COLLECTIVE_BARRIER, ReduceOp::kSum, 0, nullptr, nullptr, 0, what);
}

Status Communicator::p2p(int kind, int peer, int64_t, void*, size_t, const std::string& what) {
  return Status::error(TFC_FAILED_PRECONDITION,
                       "%s%s%s rank %d: the %s communicator has no other rank (run the "
                       "pipeline-parallel artifact under mpirun)",
                       kind == TFC_P2P_SEND ? "send" : "recv", what.empty() ? "" : " of ",
                       what.c_str(), peer, transport());
}

Status Communicator::send(int peer, int64_t tag, const void* data, size_t bytes,
                          const std::string& what) {
  return runPointToPoint(TFC_P2P_SEND, peer, tag, const_cast<void*>(data), bytes, what);
}

Status Communicator::recv(int peer, int64_t tag, void* data, size_t bytes,
                          const std::string& what) {
  return runPointToPoint(TFC_P2P_RECV, peer, tag, data, bytes, what);
}

Status Communicator::runPointToPoint(int kind, int peer, int64_t tag, void* data, size_t bytes,
                                     const std::string& what) {
  const Clock::time_point start = Clock::now();
  {
    // After the buckets already started: one thread in MPI at a time.
    std::unique_lock<std::mutex> lock(async_->mu);
    async_->cv.wait(lock, [&] { return async_->queue.empty() && !async_->running; });
  }
  Status status = p2p(kind, peer, tag, data, bytes, what);
  const double seconds = secondsSince(start);
  std::lock_guard<std::mutex> lock(async_->mu);
  Stats& s = async_->stats;
  s.messages++;
  s.bytes += static_cast<double>(bytes);
  s.commSeconds += seconds;
  s.exposedSeconds += seconds;
  if (kind == TFC_P2P_RECV) s.receiveSeconds += seconds;
  return status;
}

std::unique_ptr<Communicator> makeSingleCommunicator() {
  return std::make_unique<SingleCommunicator>();
}

StatusOr<double> commTimeout() {
  constexpr double kDefault = 300.0, kMax = 1e6;
  const char* v = std::getenv("TFC_COMM_TIMEOUT_S");
  if (v == nullptr || *v == '\0') return kDefault;  // unset or empty: the default
  char* end = nullptr;
  double s = std::strtod(v, &end);
  // The whole value, a finite number of seconds: "abc", "-5", "nan" or "5s" would
  // otherwise fall back to the default silently, or a rank would never time out.
  if (end == v || *end != '\0' || !std::isfinite(s) || s <= 0 || s > kMax) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "TFC_COMM_TIMEOUT_S is '%s': it must be a number of seconds above 0 "
                         "and at most %.0f (unset: %.0f)",
                         v, kMax, kDefault);
  }
  return s;
}

double commTimeoutSeconds() {
  StatusOr<double> timeout = commTimeout();
  return timeout.ok() ? *timeout : 300.0;
}

StatusOr<Communicator*> worldCommunicator() {
  // Created once; never destroyed before exit, when the plugin finalizes MPI (or aborts the
  // job after a failure).
  static std::once_flag once;
  static std::unique_ptr<Communicator>* world = nullptr;
  static Status* failure = nullptr;
  // Checked at every call, before anything is made, so that a bad value is refused where
  // the world is first needed (tfc_context_create) and not only once a collective waits.
  if (StatusOr<double> timeout = commTimeout(); !timeout.ok()) {
    return std::move(timeout).takeStatus();
  }
  std::call_once(once, [] {
    if (!launchedByMpirun()) {
      world = new std::unique_ptr<Communicator>(makeSingleCommunicator());
      return;
    }
    auto opened = openMpiPlugin();
    if (opened.ok()) {
      world = new std::unique_ptr<Communicator>(std::move(*opened));
      // Finalize MPI at a normal exit (the plugin aborts instead after a failure).
      std::atexit([] { world->reset(); });
    } else {
      failure = new Status(std::move(opened).takeStatus());
    }
  });
  if (failure != nullptr) return Status(failure->code(), failure->message());
  return world->get();
}

namespace {

// "group 'dp' (world ranks 1, 3)": |count| ranks from |first|, |stride| apart.
std::string groupName(const char* group, int first, int stride, int count) {
  std::string ranks;
  for (int i = 0; i < count; ++i) {
    if (count > 8 && i == 3) {  // 0, 2, 4, ..., 30
      ranks += ", ...";
      i = count - 1;
    }
    ranks += (i == 0 ? "" : ", ") + std::to_string(first + i * stride);
  }
  return std::string("group '") + group + "' (world ranks " + ranks + ")";
}

}  // namespace

std::string ProcessMesh::flags() const {
  std::string text;
  for (auto [name, n] : {std::pair<const char*, int64_t>{"dp", dp}, {"pp", pp}, {"tp", tp}}) {
    if (n > 1) text += (text.empty() ? "--" : " --") + std::string(name) + "=" + std::to_string(n);
  }
  return text;
}

StatusOr<Communicator*> groupCommunicator(const std::string& group, const ProcessMesh& mesh) {
  TFC_ASSIGN_OR_RETURN(Communicator * world, worldCommunicator());
  // One kind of parallelism: whatever the group's name (a hand-written module's "ep"), the world.
  if (mesh.dimensions() <= 1 || group.empty()) return world;
  if (group != "dp" && group != "pp" && group != "tp") {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "a collective over process group '%s': the mesh of %s has the groups "
                         "'dp', 'pp' and 'tp'",
                         group.c_str(), mesh.flags().c_str());
  }
  // Made once, on the thread that creates the first context (the groups live as long as the
  // world, which owns them; a group of one rank lives here).
  static std::mutex mu;
  static ProcessMesh madeFor{0, 0, 0};
  static std::map<std::string, Communicator*>* groups = nullptr;
  static Status* failure = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (failure != nullptr) return Status(failure->code(), failure->message());
  if (groups == nullptr) {
    const int size = world->size(), rank = world->rank();
    if (size != mesh.size()) {
      return Status::error(TFC_FAILED_PRECONDITION,
                           "a world of %d processes is not the mesh of %s (%lld processes)",
                           size, mesh.flags().c_str(), static_cast<long long>(mesh.size()));
    }
    const int M = static_cast<int>(mesh.tp), S = static_cast<int>(mesh.pp);
    const int N = static_cast<int>(mesh.dp);
    const int t = rank % M, s = rank / M % S, d = rank / (M * S);
    struct Axis {
      const char* name;
      int count, color, key, first, stride;
    };
    // Every rank splits the world in the same order.
    const Axis axes[] = {{"tp", M, d * S + s, t, (d * S + s) * M, 1},
                         {"pp", S, d * M + t, s, d * S * M + t, M},
                         {"dp", N, s * M + t, d, s * M + t, S * M}};
    auto* made = new std::map<std::string, Communicator*>();
    for (const Axis& axis : axes) {
      if (axis.count == 1) {
        (*made)[axis.name] = makeSingleCommunicator().release();
        continue;
      }
      auto split =
          world->split(axis.color, axis.key, groupName(axis.name, axis.first, axis.stride, axis.count));
      if (!split.ok()) {
        failure = new Status(std::move(split).takeStatus());
        return Status(failure->code(), failure->message());
      }
      (*made)[axis.name] = *split;
    }
    groups = made;
    madeFor = mesh;
  } else if (!(madeFor == mesh)) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "this process made its process groups for the mesh of %s, not %s: one "
                         "process runs artifacts of one layout",
                         madeFor.flags().c_str(), mesh.flags().c_str());
  }
  return groups->at(group);
}

}  // namespace tfc
