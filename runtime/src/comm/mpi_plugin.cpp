// The MPI communicator plugin (libtfc_comm_mpi.so; comm_plugin.h says why a plugin).
//
// Every collective is MPI's non-blocking form (MPI_Iallreduce, ...) polled with MPI_Test
// until it completes or the deadline passes: MPI's blocking collectives have no timeout, and a
// peer that stopped (or died without mpirun noticing) would hang the others for ever. On a
// timeout the message names the collective, this rank and the world; the request cannot be
// cancelled, so close() aborts the job (MPI_Abort), which makes mpirun stop every rank.
#include <mpi.h>
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <climits>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm_plugin.h"

namespace {

struct Impl {
  int rank = 0;
  int size = 1;
  bool failed = false;
  MPI_Comm comm = MPI_COMM_WORLD;  // the world, or one split off it (freed by close)
  // Sends not yet known delivered, each with its own copy of the bytes.
  struct PendingSend {
    MPI_Request request;
    std::vector<char> bytes;
  };
  std::vector<PendingSend> sends;
};

const char* kindName(int32_t kind) {
  switch (kind) {
    case TFC_COLLECTIVE_ALL_REDUCE: return "MPI_Iallreduce";
    case TFC_COLLECTIVE_REDUCE_SCATTER: return "MPI_Ireduce_scatter_block";
    case TFC_COLLECTIVE_ALL_GATHER: return "MPI_Iallgather";
    case TFC_COLLECTIVE_ALL_TO_ALL: return "MPI_Ialltoall";
    case TFC_COLLECTIVE_BROADCAST: return "MPI_Ibcast";
    case TFC_COLLECTIVE_BARRIER: return "MPI_Ibarrier";
    default: return "collective";
  }
}

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

// Waits for |request| until |timeout_s| has passed. Open MPI progresses a non-blocking
// collective only inside MPI calls, so the loop keeps testing; between tests it yields the
// core (sched_yield), which costs nothing when the rank has the core to itself and lets the
// other ranks run when they outnumber the cores (mpirun --oversubscribe). A sleep here
// instead (50 us) made the all-reduces of a small gpt2's step 3x slower.
int wait(Impl* impl, MPI_Request* request, int32_t kind, uint64_t count, double timeout_s,
         char* error, size_t error_size) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  for (long polls = 0;; ++polls) {
    int done = 0;
    int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      std::snprintf(error, error_size, "rank %d of %d: %s failed: %s", impl->rank, impl->size,
                    kindName(kind), mpiError(rc).c_str());
      impl->failed = true;
      return 1;
    }
    if (done) return 0;
    if (polls % 1024 == 1023) {
      double waited = std::chrono::duration<double>(Clock::now() - start).count();
      if (waited > timeout_s) {
        std::snprintf(error, error_size,
                      "rank %d of %d: %s of %llu elements did not complete within %.0f s "
                      "(TFC_COMM_TIMEOUT_S): another rank of the %d died, stopped or is "
                      "running a different program; aborting the job",
                      impl->rank, impl->size, kindName(kind),
                      static_cast<unsigned long long>(count), timeout_s, impl->size);
        impl->failed = true;
        return 1;
      }
    }
    sched_yield();
  }
}

int32_t run(void* p, int32_t kind, int32_t reduce, int32_t root, const void* send, void* recv,
            uint64_t count, double timeout_s, char* error, size_t error_size) {
  Impl* impl = static_cast<Impl*>(p);
  if (count > static_cast<uint64_t>(INT32_MAX)) {
    std::snprintf(error, error_size, "rank %d: %s of %llu elements: more than MPI's int count",
                  impl->rank, kindName(kind), static_cast<unsigned long long>(count));
    return 1;
  }
  const int n = static_cast<int>(count);
  const void* in = (send == recv) ? MPI_IN_PLACE : send;
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  float* out = static_cast<float*>(recv);
  switch (kind) {
    case TFC_COLLECTIVE_ALL_REDUCE:
      rc = MPI_Iallreduce(in, recv, n, MPI_FLOAT, MPI_SUM, impl->comm, &request);
      break;
    case TFC_COLLECTIVE_REDUCE_SCATTER:
      rc = MPI_Ireduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_SUM, impl->comm, &request);
      break;
    case TFC_COLLECTIVE_ALL_GATHER:
      rc = MPI_Iallgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, impl->comm, &request);
      break;
    case TFC_COLLECTIVE_ALL_TO_ALL:
      rc = MPI_Ialltoall(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, impl->comm, &request);
      break;
    case TFC_COLLECTIVE_BROADCAST:
      rc = MPI_Ibcast(recv, n, MPI_BYTE, root, impl->comm, &request);
      break;
    case TFC_COLLECTIVE_BARRIER:
      rc = MPI_Ibarrier(impl->comm, &request);
      break;
    default:
      std::snprintf(error, error_size, "unknown collective %d", kind);
      return 1;
  }
  if (rc != MPI_SUCCESS) {
    std::snprintf(error, error_size, "rank %d of %d: %s failed to start: %s", impl->rank,
                  impl->size, kindName(kind), mpiError(rc).c_str());
    impl->failed = true;
    return 1;
  }
  if (wait(impl, &request, kind, count, timeout_s, error, error_size) != 0) return 1;
  if (reduce == TFC_REDUCE_MEAN &&
      (kind == TFC_COLLECTIVE_ALL_REDUCE || kind == TFC_COLLECTIVE_REDUCE_SCATTER)) {
    // Sum, then one division: the same rounding as a single process's mean over the ranks'
    // contributions summed in MPI's order.
    const float scale = 1.0f / static_cast<float>(impl->size);
    for (int i = 0; i < n; ++i) out[i] *= scale;
  }
  return 0;
}

// Frees the copies of the sends that were delivered.
int32_t sweepSends(Impl* impl, char* error, size_t error_size) {
  auto& sends = impl->sends;
  for (size_t i = 0; i < sends.size();) {
    int done = 0;
    int rc = MPI_Test(&sends[i].request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      std::snprintf(error, error_size, "rank %d of %d: MPI_Isend failed: %s", impl->rank,
                    impl->size, mpiError(rc).c_str());
      impl->failed = true;
      return 1;
    }
    if (done) {
      sends[i] = std::move(sends.back());
      sends.pop_back();
    } else {
      ++i;
    }
  }
  return 0;
}

int32_t p2p(void* p, int32_t kind, int32_t peer, int64_t tag, void* data, uint64_t bytes,
            double timeout_s, char* error, size_t error_size) {
  Impl* impl = static_cast<Impl*>(p);
  if (peer < 0 || peer >= impl->size || peer == impl->rank || bytes > INT32_MAX) {
    std::snprintf(error, error_size,
                  "rank %d of %d: a message of %llu bytes to or from rank %d: not another rank "
                  "of the group, or over 2 GiB",
                  impl->rank, impl->size, static_cast<unsigned long long>(bytes), peer);
    return 1;
  }
  const int n = static_cast<int>(bytes), t = static_cast<int>(tag);
  if (kind == TFC_P2P_SEND) {
    impl->sends.push_back({MPI_REQUEST_NULL, std::vector<char>(bytes)});
    auto& send = impl->sends.back();
    if (bytes > 0) std::memcpy(send.bytes.data(), data, bytes);
    int rc = MPI_Isend(send.bytes.data(), n, MPI_BYTE, peer, t, impl->comm, &send.request);
    if (rc != MPI_SUCCESS) {
      std::snprintf(error, error_size, "rank %d of %d: MPI_Isend of message %d to rank %d: %s",
                    impl->rank, impl->size, t, peer, mpiError(rc).c_str());
      impl->failed = true;
      return 1;
    }
    return sweepSends(impl, error, error_size);
  }
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_Irecv(data, n, MPI_BYTE, peer, t, impl->comm, &request);
  if (rc != MPI_SUCCESS) {
    std::snprintf(error, error_size, "rank %d of %d: MPI_Irecv of message %d from rank %d: %s",
                  impl->rank, impl->size, t, peer, mpiError(rc).c_str());
    impl->failed = true;
    return 1;
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  for (long polls = 0;; ++polls) {
    int done = 0;
    MPI_Status status;
    rc = MPI_Test(&request, &done, &status);
    if (rc != MPI_SUCCESS) {
      // A larger message than expected fails here (MPI_ERR_TRUNCATE).
      std::snprintf(error, error_size,
                    "rank %d of %d: MPI_Irecv of message %d (%llu bytes) from rank %d failed: %s",
                    impl->rank, impl->size, t, static_cast<unsigned long long>(bytes), peer,
                    mpiError(rc).c_str());
      impl->failed = true;
      return 1;
    }
    if (done) {
      int got = 0;
      MPI_Get_count(&status, MPI_BYTE, &got);
      if (got != n) {
        std::snprintf(error, error_size,
                      "rank %d of %d: message %d from rank %d holds %d bytes, not %d: the "
                      "ranks run different programs",
                      impl->rank, impl->size, t, peer, got, n);
        impl->failed = true;
        return 1;
      }
      return sweepSends(impl, error, error_size);
    }
    if (polls % 1024 == 1023 &&
        std::chrono::duration<double>(Clock::now() - start).count() > timeout_s) {
      std::snprintf(error, error_size,
                    "rank %d of %d: MPI_Irecv of message %d (%llu bytes) from rank %d did not "
                    "complete within %.0f s (TFC_COMM_TIMEOUT_S): rank %d died, stopped or is "
                    "running a different program; aborting the job",
                    impl->rank, impl->size, t, static_cast<unsigned long long>(bytes), peer,
                    timeout_s, peer);
      impl->failed = true;
      return 1;
    }
    sched_yield();
  }
}

void close(void* p) {
  Impl* impl = static_cast<Impl*>(p);
  // Sends still in flight are delivered before the transport ends (every receive of a
  // finished program was posted); a receiver that is gone makes the job abort.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  char ignored[256];
  while (!impl->failed && !impl->sends.empty()) {
    if (sweepSends(impl, ignored, sizeof(ignored)) != 0) break;
    if (std::chrono::duration<double>(Clock::now() - start).count() > 60.0) {
      std::fprintf(stderr, "rank %d of %d: %zu point-to-point messages were not received "
                   "within 60 s of the end; aborting the job\n",
                   impl->rank, impl->size, impl->sends.size());
      impl->failed = true;
      break;
    }
    sched_yield();
  }
  if (impl->failed) {
    // A pending collective cannot be cancelled and MPI_Finalize would wait for it: stop the job.
    // The rank's message (why it stops) was printed just before; mpirun forwards a rank's
    // output asynchronously and may tear the job down before it has read the pipe, so the
    // message is lost (seen under load in CI). A second's pause lets it through: this path
    // runs once, when the job is already failing.
    std::fflush(stdout);
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (impl->comm != MPI_COMM_WORLD) {
    MPI_Comm_free(&impl->comm);
    delete impl;
    return;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
  delete impl;
}

void markFailed(void* p) { static_cast<Impl*>(p)->failed = true; }

int32_t split(void* p, int32_t color, int32_t key, tfc_comm_plugin_t* out, char* error,
              size_t error_size);

void fill(Impl* impl, int32_t thread_serialized, tfc_comm_plugin_t* out) {
  out->version = TFC_COMM_PLUGIN_VERSION;
  out->rank = impl->rank;
  out->size = impl->size;
  out->impl = impl;
  out->run = run;
  out->close = close;
  out->thread_serialized = thread_serialized;
  out->split = split;
  out->mark_failed = markFailed;
  out->p2p = p2p;
}

int32_t split(void* p, int32_t color, int32_t key, tfc_comm_plugin_t* out, char* error,
              size_t error_size) {
  Impl* parent = static_cast<Impl*>(p);
  MPI_Comm comm = MPI_COMM_NULL;
  int rc = MPI_Comm_split(parent->comm, color, key, &comm);
  if (rc != MPI_SUCCESS) {
    std::snprintf(error, error_size, "rank %d of %d: MPI_Comm_split failed: %s", parent->rank,
                  parent->size, mpiError(rc).c_str());
    return 1;
  }
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  Impl* impl = new Impl;
  impl->comm = comm;
  MPI_Comm_rank(comm, &impl->rank);
  MPI_Comm_size(comm, &impl->size);
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  fill(impl, provided >= MPI_THREAD_SERIALIZED ? 1 : 0, out);
  return 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int32_t tfc_comm_plugin_open_v3(
    tfc_comm_plugin_t* out, char* error, size_t error_size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    // SERIALIZED: gradient buckets run on the runtime's communication thread, the blocking
    // collectives on the caller's, never two at once (communicator.cpp).
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
      std::snprintf(error, error_size, "MPI_Init_thread failed: %s", mpiError(rc).c_str());
      return 1;
    }
  } else {
    MPI_Query_thread(&provided);
  }
  // Errors come back as codes (and become messages), not MPI's default abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  Impl* impl = new Impl;
  MPI_Comm_rank(MPI_COMM_WORLD, &impl->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &impl->size);
  fill(impl, provided >= MPI_THREAD_SERIALIZED ? 1 : 0, out);
  return 0;
}
