// Collectives across the processes of one training job: the one interface behind which the
// transports live (DESIGN.md "Collectives ... go through one communicator interface").
//
//   TFC_ASSIGN_OR_RETURN(tfc::Communicator* world, tfc::worldCommunicator());
//   TFC_RETURN_IF_ERROR(world->allReduce(grad, grad, n, tfc::ReduceOp::kMean, "grad"));
//
// Implementations: size 1 (every collective is a copy), and MPI, in the plugin
// libtfc_comm_mpi.so that worldCommunicator() loads when the process was started by mpirun
// (OMPI_COMM_WORLD_SIZE or PMI_SIZE in the environment). The collectives of a CUDA artifact's
// context run over NCCL on the GPU's buffers instead where NCCL can (runtime/src/devices/cuda/nccl.hpp,
// libnccl.so.2 loaded at run time, TFC_NCCL_LIBRARY names another), its unique id broadcast
// over this world communicator; TFC_COMM_DEVICE chooses: auto (the default: NCCL where it
// loads and runs, else staged through the host over this communicator), nccl (an error where
// it cannot), host (always staged).
//
// Every collective has a deadline, TFC_COMM_TIMEOUT_S seconds (default 300): a peer that died
// or stopped makes the others fail with an error naming the collective, the tensor and the
// ranks, never hang. A transport that timed out cannot be used again (MPI cannot cancel a
// collective); at exit the job is then aborted so that mpirun stops every rank.
//
// Thread-safety: one thread at a time per communicator (its communication thread for gradient
// buckets is its own business); every rank must call the same
// collectives in the same order with the same counts (the compiled graph guarantees it: every
// rank runs the same artifact).
#ifndef TFC_RUNTIME_COMMUNICATOR_HPP_
#define TFC_RUNTIME_COMMUNICATOR_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tfc/runtime/status.hpp"

namespace tfc {

enum class ReduceOp { kSum = 0, kMean = 1 };

class Communicator {
 public:
  Communicator();
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "single" or "mpi", for messages.
  virtual const char* transport() const = 0;
  // "" for the world; for a communicator made by split(), the name given there ("group 'tp'
  // (world ranks 0, 1)"), which its error messages carry.
  const std::string& name() const { return name_; }

  // A communicator of some of this one's ranks, as MPI_Comm_split makes: the ranks that pass the
  // same |color| form one, ranked by |key|. Collective over this communicator (every rank calls
  // it at the same point), without a deadline. The new communicator belongs to this one and is
  // closed before it; it runs everything on the caller's thread (runsOnAnyThread() is false for
  // both from then on: MPI_THREAD_SERIALIZED allows one thread in MPI at a time, whichever
  // communicator it uses).
  StatusOr<Communicator*> split(int color, int key, const std::string& name);

  // |what| names the data in error messages (a tensor, "loss"); may be "".
  // recv = op over ranks of send (count floats each); send may equal recv.
  Status allReduce(const float* send, float* recv, size_t count, ReduceOp op,
                   const std::string& what = "");
  // send: count * size() floats; recv: rank()'s block of count floats of the reduction.
  Status reduceScatter(const float* send, float* recv, size_t count, ReduceOp op,
                       const std::string& what = "");
  // send: count floats; recv: count * size() floats, block r from rank r.
  Status allGather(const float* send, float* recv, size_t count, const std::string& what = "");
  // send, recv: count * size() floats; block s of recv is block rank() of rank s's send.
  Status allToAll(const float* send, float* recv, size_t count, const std::string& what = "");
  // |bytes| bytes of data from rank |root| to every rank.
  Status broadcast(void* data, size_t bytes, int root, const std::string& what = "");
  Status barrier(const std::string& what = "");

  // Point-to-point (pipeline stages, tfc --pp): send() copies |bytes| bytes of |data| and
  // returns at once (the transport delivers them meanwhile); recv() blocks until the message
  // |tag| from rank |peer| has arrived, holding exactly |bytes| bytes, within the deadline.
  // Messages between two ranks match by tag, in any order. Both run on the caller's thread,
  // after the pending buckets.
  Status send(int peer, int64_t tag, const void* data, size_t bytes, const std::string& what = "");
  Status recv(int peer, int64_t tag, void* data, size_t bytes, const std::string& what = "");

  // A gradient bucket (tfc.all_reduce_start / tfc.all_reduce_wait): one all-reduce over the
  // concatenation of |n| buffers of counts[i] floats. startAllReduce copies them into a flat
  // buffer of this communicator's (they may be overwritten once it returns) and, where the
  // transport may run on another thread (runsOnAnyThread), hands it to the communication
  // thread and returns; else it runs the collective at once. waitAllReduce(tag) blocks until
  // it is done and copies the result into recv[i]. A failure is returned by the wait. Tags
  // are unique among pending buckets; buckets run in the order they were started, and a
  // blocking collective called meanwhile runs after them (the same order on every rank).
  Status startAllReduce(int64_t tag, int n, const float* const* send, const int64_t* counts,
                        ReduceOp op, const std::string& what = "");
  Status waitAllReduce(int64_t tag, int n, float* const* recv, const int64_t* counts);

  // Time and bytes of this process's collectives, for `TFC_COMM_STATS=1` (printed to stderr
  // when the communicator closes) and the docs' figures.
  struct Stats {
    int64_t collectives = 0;     // blocking ones and buckets
    int64_t buckets = 0;
    int64_t messages = 0;        // point-to-point sends and receives
    double receiveSeconds = 0;   // blocked in point-to-point receives (pipeline stages)
    double bytes = 0;            // payload bytes of all of them (each rank's own)
    double commSeconds = 0;      // inside the transport (the thread's time for buckets)
    double exposedSeconds = 0;   // the caller blocked: blocking collectives and waits
    double copySeconds = 0;      // packing and unpacking the buckets' flat buffers
  };
  Stats stats() const;

  // A failure outside this communicator left the ranks out of step (a CUDA context's NCCL
  // collective timed out or failed): at exit, abort the job instead of closing the transport
  // in order, which could wait for ever on a rank still inside a collective.
  virtual void markFailed() {}

 protected:
  // One collective (the kinds and counts of comm_plugin.h's TFC_COMM_*).
  virtual Status run(int kind, ReduceOp op, int root, const void* send, void* recv,
                     size_t count, const std::string& what) = 0;
  // One point-to-point message (TFC_P2P_SEND or TFC_P2P_RECV); the default: a transport
  // without them (one process has no peer).
  virtual Status p2p(int kind, int peer, int64_t tag, void* data, size_t bytes,
                     const std::string& what);
  // Whether run() may be called from a thread other than the one that opened the transport
  // (one call at a time): then buckets run on a communication thread.
  virtual bool runsOnAnyThread() const { return false; }
  // The transport's part of split(): a communicator of the ranks of |color|, ranked by |key|.
  virtual StatusOr<std::unique_ptr<Communicator>> splitTransport(int color, int key) = 0;
  // Whether this communicator was made by split() or has made one.
  bool splitOrSplitOff() const { return isSplit_ || !splits_.empty(); }
  // Closes the communicators split off this one; a transport's destructor calls it before it
  // closes its own.
  void closeSplits() { splits_.clear(); }
  // Ends the communication thread after the buckets queued and prints TFC_COMM_STATS; the
  // destructor of a transport whose runsOnAnyThread() is true calls it before closing the
  // transport (the thread calls run()). Idempotent.
  void stopAsync();

 private:
  // Runs a point-to-point message after the pending buckets, timed.
  Status runPointToPoint(int kind, int peer, int64_t tag, void* data, size_t bytes,
                         const std::string& what);
  // Runs a blocking collective after the pending buckets, timed.
  Status runBlocking(int kind, ReduceOp op, int root, const void* send, void* recv,
                     size_t count, const std::string& what);
  struct Async;
  std::unique_ptr<Async> async_;
  std::string name_;
  bool isSplit_ = false;
  std::vector<std::unique_ptr<Communicator>> splits_;
};

// A communicator of one rank: every collective copies send to recv.
std::unique_ptr<Communicator> makeSingleCommunicator();

// The process's world, created at the first call and kept until exit: the MPI plugin when the
// process runs under mpirun, else a single rank. An error (no plugin, MPI failing to start)
// is returned at every call.
StatusOr<Communicator*> worldCommunicator();

// The ranks of a job as a mesh (artifact_abi.h): N data-parallel replicas of S pipeline
// stages of M tensor-parallel ranks, world rank r = (d x S + s) x M + t. Group "tp" is the M
// ranks of one stage of one replica (t varies), "pp" the S stages of one replica holding the
// same slice t, "dp" the N replicas' ranks of the same stage and slice; "" is the world.
struct ProcessMesh {
  int64_t dp = 1, pp = 1, tp = 1;

  int64_t size() const { return dp * pp * tp; }
  // The sizes above 1 (one kind of parallelism alone: every group is the world).
  int dimensions() const { return (dp > 1) + (pp > 1) + (tp > 1); }
  int64_t sizeOf(const std::string& group) const {
    return group == "dp" ? dp : group == "pp" ? pp : group == "tp" ? tp : size();
  }
  // The coordinates of world rank |rank|: its stage s and its tensor-parallel slice t.
  int64_t stageOf(int64_t rank) const { return rank / tp % pp; }
  int64_t sliceOf(int64_t rank) const { return rank % tp; }
  // "--dp=2 --pp=2 --tp=2": the tfc flags that compile it (those above 1; "" for one process).
  std::string flags() const;
  bool operator==(const ProcessMesh& o) const {
    return dp == o.dp && pp == o.pp && tp == o.tp;
  }
};

// The communicator of |group| ("dp", "pp", "tp" or "" for the world) on this rank of |mesh|.
// Where the mesh has one dimension above 1 (or none) every group, whatever its name, is the
// world; otherwise the first call splits the world into every group above one rank
// (collective: every rank makes them at the same point, as tfc_context_create does), a group
// of one rank being a single communicator. A world of another size than the mesh's, a later call with another mesh, or
// another group is an error naming them.
StatusOr<Communicator*> groupCommunicator(const std::string& group, const ProcessMesh& mesh);

// The deadline of every collective: TFC_COMM_TIMEOUT_S (seconds, above 0 and at most
// 1e6), default 300 when unset or empty. Any other value (not a number, negative, nan, with
// trailing text) is TFC_INVALID_ARGUMENT naming the variable and the value, which
// worldCommunicator() (and so every context) returns.
StatusOr<double> commTimeout();
// commTimeout(), or 300 when the variable is invalid (for callers past that check).
double commTimeoutSeconds();

}  // namespace tfc

#endif  // TFC_RUNTIME_COMMUNICATOR_HPP_
