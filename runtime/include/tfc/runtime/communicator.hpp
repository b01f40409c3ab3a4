// Collectives across the processes of one training job: the one interface behind which the
// transports live (DESIGN.md "Collectives ... go through one communicator interface").
//
//   TFC_ASSIGN_OR_RETURN(tfc::Communicator* world, tfc::worldCommunicator());
//   TFC_RETURN_IF_ERROR(world->allReduce(grad, grad, n, tfc::ReduceOp::kMean, "grad"));
//
// Implementations: size 1 (every collective is a copy), and MPI, in the plugin
// libtfc_comm_mpi.so that worldCommunicator() loads when the process was started by mpirun
// (OMPI_COMM_WORLD_SIZE or PMI_SIZE in the environment). NCCL (CUDA artifacts) is not done yet.
//
// Every collective has a deadline, TFC_COMM_TIMEOUT_S seconds (default 300): a peer that died
// or stopped makes the others fail with an error naming the collective, the tensor and the
// ranks, never hang. A transport that timed out cannot be used again (MPI cannot cancel a
// collective); at exit the job is then aborted so that mpirun stops every rank.
//
// Thread-safety: one thread at a time per communicator; every rank must call the same
// collectives in the same order with the same counts (the compiled graph guarantees it: every
// rank runs the same artifact).
#ifndef TFC_RUNTIME_COMMUNICATOR_HPP_
#define TFC_RUNTIME_COMMUNICATOR_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tfc/runtime/status.hpp"

namespace tfc {

enum class ReduceOp { kSum = 0, kMean = 1 };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "single" or "mpi", for messages.
  virtual const char* transport() const = 0;

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

 protected:
  // One collective (the kinds and counts of comm_plugin.h's TFC_COMM_*).
  virtual Status run(int kind, ReduceOp op, int root, const void* send, void* recv,
                     size_t count, const std::string& what) = 0;
};

// A communicator of one rank: every collective copies send to recv.
std::unique_ptr<Communicator> makeSingleCommunicator();

// The process's world, created at the first call and kept until exit: the MPI plugin when the
// process runs under mpirun, else a single rank. An error (no plugin, MPI failing to start)
// is returned at every call.
StatusOr<Communicator*> worldCommunicator();

// The deadline of every collective: TFC_COMM_TIMEOUT_S (seconds, > 0), default 300.
double commTimeoutSeconds();

}  // namespace tfc

#endif  // TFC_RUNTIME_COMMUNICATOR_HPP_
