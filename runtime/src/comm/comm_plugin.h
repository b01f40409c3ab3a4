/* Internal: the C interface between the runtime and a communicator plugin (libtfc_comm_mpi.so).
 *
 * Why a plugin: the runtime must build, link and run on a machine without MPI (DESIGN.md: C++17,
 * the C library and dlopen). The MPI communicator lives in its own shared library, built only
 * where CMake finds MPI, and the runtime dlopen()s it when the process was started by mpirun.
 * The interface is plain C so that the plugin needs nothing of the runtime (no Status, no
 * allocator) and the two cannot disagree on a C++ layout.
 *
 * The plugin exports TFC_COMM_PLUGIN_SYMBOL, a function that initializes the transport and
 * fills a tfc_comm_plugin_t, or returns non-zero with a message in |error|.
 */
#ifndef TFC_RUNTIME_SRC_COMM_COMM_PLUGIN_H_
#define TFC_RUNTIME_SRC_COMM_COMM_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#include "tfc/artifact_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TFC_COMM_PLUGIN_VERSION 3u
#define TFC_COMM_PLUGIN_SYMBOL "tfc_comm_plugin_open_v3"

/* The collectives and reductions are the artifact ABI's (TFC_COLLECTIVE_*, TFC_REDUCE_*, with
 * the counts written there); BROADCAST here takes its root from `root`. */

typedef struct tfc_comm_plugin_t {
  uint32_t version; /* TFC_COMM_PLUGIN_VERSION */
  int32_t rank;
  int32_t size;
  void* impl;
  /* Runs one collective on every rank of this communicator; returns 0, or non-zero with a
   * message in |error| (which names the collective and the ranks) when it failed or did not
   * complete within |timeout_s| seconds. After a timeout the transport is unusable (a
   * collective cannot be cancelled): close() then aborts the job instead of finalizing it. */
  int32_t (*run)(void* impl, int32_t kind, int32_t reduce, int32_t root, const void* send,
                 void* recv, uint64_t count, double timeout_s, char* error, size_t error_size);
  /* Finalizes the transport (or aborts the job after a failure) and frees impl. */
  void (*close)(void* impl);
  /* Non-zero when run() may be called from any thread, one call at a time (MPI's
   * MPI_THREAD_SERIALIZED): the runtime then runs gradient buckets on a communication thread
   * while compiled code goes on; zero (an older plugin's zeroed field): on the caller's. */
  int32_t thread_serialized;
  /* Splits this communicator as MPI_Comm_split does: the ranks that pass the same |color| form
   * one new communicator, ranked by |key|; fills |out| as the open function does (rank and size
   * within the new one). Its close() frees it without ending the transport, and must come
   * before its parent's. Collective over this communicator's ranks (every one calls it at the
   * same point); no deadline. Returns 0, or non-zero with a message in |error|. */
  int32_t (*split)(void* impl, int32_t color, int32_t key, struct tfc_comm_plugin_t* out,
                   char* error, size_t error_size);
  /* Marks the transport failed, so that close() aborts the job: a failure elsewhere (a CUDA
   * context's NCCL collective) left the ranks out of step. NULL (an older plugin's zeroed
   * field): not available. */
  void (*mark_failed)(void* impl);
  /* A point-to-point message (kind TFC_P2P_SEND or TFC_P2P_RECV of artifact_abi.h) with rank
   * |peer| of this communicator. A send copies the |bytes| bytes of |data| and returns at
   * once; the copy is freed once delivered (or at close). A receive blocks until the message
   * |tag| from |peer| has arrived, within |timeout_s| seconds, and fails unless it holds
   * exactly |bytes| bytes. Returns 0, or non-zero with a message in |error| (then the
   * transport is failed, as after a timed-out collective). */
  int32_t (*p2p)(void* impl, int32_t kind, int32_t peer, int64_t tag, void* data,
                 uint64_t bytes, double timeout_s, char* error, size_t error_size);
} tfc_comm_plugin_t;

typedef int32_t (*tfc_comm_plugin_open_fn_t)(tfc_comm_plugin_t* out, char* error,
                                             size_t error_size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TFC_RUNTIME_SRC_COMM_COMM_PLUGIN_H_ */
