/* The tfc artifact ABI: the contract between the compiler (codegen/artifact) and the
 * runtime. Plain C, no includes beyond <stdint.h>, shared verbatim by both sides.
 *
 * A compiled model is a shared object that exports exactly one symbol,
 * TFC_ARTIFACT_SYMBOL ("tfc_artifact_v6"): a function taking no arguments and returning a
 * pointer to a constant tfc_artifact_t that lives as long as the object is loaded. The
 * runtime dlopen()s the file, looks the symbol up, and refuses the file unless `magic` is
 * TFC_ARTIFACT_MAGIC, `abi_version` equals the runtime's TFC_ARTIFACT_ABI_VERSION and
 * `struct_size` is at least sizeof(tfc_artifact_t) as the runtime knows it.
 *
 * Memory model of one call of an entry point:
 *   - params[i] points to parameter i (order of tfc_artifact_t.params), dense row-major;
 *   - state[i] points to state tensor i (order of tfc_artifact_t.state); the entry may
 *     read and write it in place (KV caches, optimizer moments);
 *   - inputs[i] / outputs[i] point to the entry's inputs / outputs (tfc_entry_t order);
 *   - arena points to entry.arena_bytes bytes of scratch, aligned to TFC_ARENA_ALIGNMENT,
 *     owned by the caller; the entry keeps no pointer to it after returning.
 * None of these may alias each other. Entries of one artifact may run concurrently only on
 * distinct state and arena memory.
 *
 * Device artifacts (tfc_artifact_t.device != TFC_DEVICE_CPU): all six kinds of pointers
 * above are device addresses (CUDA: CUdeviceptr values), aligned to the device's arena
 * alignment. The entry runs on the host and never dereferences them: it computes views
 * into the arena and asks the host to launch the device kernels, copy between device
 * buffers and provide device copies of its constants (tfc_host_api_t.device_*). Launches
 * are asynchronous; the entry returns once all are queued.
 *
 * Versioning: any change to these structs or their meaning bumps TFC_ARTIFACT_ABI_VERSION
 * and renames the exported symbol's suffix with it, so an old runtime never misreads a new
 * artifact (and says which versions it found and expected).
 */
#ifndef TFC_ARTIFACT_ABI_H_
#define TFC_ARTIFACT_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TFC_ARTIFACT_MAGIC 0x31434654u /* "TFC1" read as a little-endian uint32 */
#define TFC_ARTIFACT_ABI_VERSION 6u
#define TFC_ARTIFACT_SYMBOL "tfc_artifact_v6"
#define TFC_ARENA_ALIGNMENT 64u

/* Where an artifact's kernels run and its buffers live. */
enum {
  TFC_DEVICE_CPU = 0,
  TFC_DEVICE_CUDA = 1,
};

/* Element types; the values equal tfc_dtype_t in tfc/runtime/dtype.h. */
enum {
  TFC_ABI_F32 = 1,
  TFC_ABI_F16 = 2,
  TFC_ABI_BF16 = 3,
  TFC_ABI_I32 = 5,
  TFC_ABI_I64 = 6,
};

/* Flags of a tensor description. */
enum {
  TFC_TENSOR_FROZEN = 1u << 0, /* a parameter that training never updates */
};

/* The most parameters a device kernel takes (each a device pointer): CUDA's 4 KiB of kernel
 * parameter space, the limit on every architecture and driver (CUDA 12.1 raised it to 32 KiB
 * on Volta and later only). The compiler refuses a kernel with more; the runtime checks it. */
#define TFC_DEVICE_MAX_KERNEL_ARGS 512

/* The shape of one device kernel launch: `grid` blocks of `block` threads (x, y, z; at most
 * 1024 threads a block), each with `shared_bytes` bytes of dynamic shared memory. The
 * compiler writes one per kernel: a grid-stride kernel gets a 1-D grid covering its work
 * items, a tiled one (a tensor-core product: 128 threads, a block per 64 x 64 tile) the grid
 * of its tiles. */
typedef struct tfc_device_launch_t {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;
} tfc_device_launch_t;

/* A matrix product that the host may run with a vendor library (tfc_host_api_t.device_matmul)
 * instead of the artifact's own kernel for it: for b in [0, batch),
 *   C[b] = op(A[b]) op(B[b]) (+ bias, one value per column n, added to every row),
 * all row-major and dense: op(A) is m x k (A stored k x m when trans_a), op(B) is k x n (B
 * stored n x k when trans_b), C is m x n with the batches m x n elements apart; A[b] starts
 * b x stride_a elements after A (0: one A for every batch), B[b] likewise. Sums in f32;
 * `tf32`: f32 operands may be rounded to TF32 first (tfc --cuda-tf32). Types: TFC_ABI_*;
 * bias_type 0 when there is no bias. */
typedef struct tfc_device_matmul_t {
  int32_t a_type, b_type, c_type, bias_type;
  int32_t trans_a, trans_b, tf32, reserved; /* reserved: 0 */
  int64_t batch, m, n, k;
  int64_t stride_a, stride_b;
} tfc_device_matmul_t;

/* The run-time errors a device kernel reports (the CPU kernels report the same conditions
 * through tfc_kernels_error): the first code reported stays in the kernels' device word
 * `tfc_error_code` (codegen/cuda/kernels/prelude.cuh), which the runtime reads after an entry
 * and words (runtime/src/devices/cuda/executor.cpp). The device code, the runtime and the CUDA
 * emulator all use these names; the numbers are what a device word holds. */
enum tfc_kernel_error {
  TFC_KERNEL_OK = 0,                  /* nothing reported */
  TFC_KERNEL_ERROR_EMBEDDING_ID = 1,  /* embedding, embedding_grad: a token id outside [0, V) */
  TFC_KERNEL_ERROR_KV_POSITION = 2,   /* kv_cache_update: a position where the update does
                                         not fit in the cache */
  TFC_KERNEL_ERROR_TARGET = 3,        /* cross_entropy and its gradient: a target outside
                                         [0, V) that is not the ignore index */
  TFC_KERNEL_ERROR_SAMPLE_NAN = 4,    /* sample: a row of logits holding NaN */
  TFC_KERNEL_ERROR_MOE_EXPERT = 5,    /* moe_ffn and its gradient: an expert id outside [0, E) */
  TFC_KERNEL_ERROR_KV_BLOCK = 6,      /* kv_cache_update with blocks, paged_attention: a block
                                         table entry a row uses outside [0, NB) */
};

/* What the runtime provides to compiled code. */
typedef struct tfc_host_api_t {
  uint32_t struct_size; /* sizeof(tfc_host_api_t) as the runtime knows it */
  void* user;           /* passed back to every callback */
  /* Runs fn(ctx, begin, end) over a partition of [0, n) on the runtime's threads and
   * returns when every part is done. `grain` is the smallest useful part. Called only
   * from the thread that called the entry point (no nesting). */
  void (*parallel_for)(void* user, int64_t n, int64_t grain,
                       void (*fn)(void* ctx, int64_t begin, int64_t end), void* ctx);
  /* Reports a run-time error (an out-of-range token id or position). Compiled code calls
   * it, then the entry point returns non-zero. The message is copied. */
  void (*report_error)(void* user, const char* message);
  /* Per-kernel timing (tfc-run profile); either may be NULL, and compiled code then skips
   * both. Called on the entry's thread right before and right after launch `kernel` of
   * the running entry (an index into its tfc_entry_t.kernels). */
  void (*kernel_begin)(void* user, int32_t kernel);
  void (*kernel_end)(void* user, int32_t kernel);
  /* Device artifacts only (NULL otherwise). Queues device kernel `kernel` (an index into
   * tfc_artifact_t.device_kernels) with the shape `launch`; args[i] is the
   * value of the kernel's i-th parameter (each a device pointer). A failure is kept by the
   * host and reported when the entry returns; later launches of that call are skipped.
   * num_args is at most TFC_DEVICE_MAX_KERNEL_ARGS. */
  void (*device_launch)(void* user, int32_t kernel, const tfc_device_launch_t* launch,
                        void* const* args, int32_t num_args);
  /* Queues a copy of `bytes` bytes between device buffers (the memory plan's copies). */
  void (*device_copy)(void* user, void* dst, const void* src, uint64_t bytes);
  /* The device copy of one of the artifact's constants (host address `data`, `bytes`
   * long), uploaded at its first use and kept as long as the host lives. NULL after a
   * failure, which the host reports when the entry returns. */
  void* (*device_constant)(void* user, const void* data, uint64_t bytes);
  /* Collectives across the processes that run this artifact together (tfc.all_reduce and
   * its kin, lowered by the CPU target). kind: TFC_COLLECTIVE_*; reduce: TFC_REDUCE_*;
   * group: the op's group name ("dp"); counts as for each kind below. Blocking: returns once
   * recv holds the result, 0 then; non-zero after host->report_error() (a peer that died or
   * timed out). NULL in a host without a communicator: compiled code then reports an error. */
  int32_t (*collective)(void* user, int32_t kind, int32_t reduce, const char* group,
                        const void* send, void* recv, uint64_t count);
  /* A gradient bucket (tfc.all_reduce_start / tfc.all_reduce_wait): one collective over the
   * concatenation of `num_buffers` f32 buffers (send[i], counts[i] elements each), started
   * by collective_start, which returns once the host holds its own copy of the data (the
   * buffers may be overwritten at once), and completed by collective_wait with the same
   * `tag` (unique among the entry's pending buckets), which copies the result into recv[i]
   * (the same counts) and returns 0, or non-zero after host->report_error() (a failure of
   * the start is reported here or at the wait). kind: TFC_COLLECTIVE_ALL_REDUCE only so
   * far. Both are called on the entry's thread, each start followed by its wait within the
   * same call of the entry; the communication runs meanwhile. NULL where the host has no
   * communicator. */
  int32_t (*collective_start)(void* user, int32_t kind, int32_t reduce, const char* group,
                              int64_t tag, int32_t num_buffers, const void* const* send,
                              const int64_t* counts);
  int32_t (*collective_wait)(void* user, int64_t tag, int32_t num_buffers, void* const* recv,
                             const int64_t* counts);
  /* Device artifacts only (NULL otherwise, or where the host has no library for products).
   * Queues the product `product` on device buffers a, b, c and bias (NULL without one) with
   * the host's library (CUDA: cuBLASLt) and returns 0, or returns non-zero without queueing
   * anything when it does not take this product (no library, a type or layout it does not
   * run): the compiled code then launches its own kernel for it, so both give the result.
   * A failure after 0 is kept and reported as device_launch's are. */
  int32_t (*device_matmul)(void* user, const tfc_device_matmul_t* product, const void* a,
                           const void* b, void* c, const void* bias);
  /* Point-to-point messages between the ranks of a group (tfc.send / tfc.recv; group "pp":
   * the pipeline stages, where rank s of the group runs stage s). kind TFC_P2P_SEND: the
   * host copies `bytes` bytes from `data` and returns at once (the buffer may be reused),
   * moving them to rank `peer` meanwhile; TFC_P2P_RECV: blocks until the message with `tag`
   * from rank `peer` has arrived and holds exactly `bytes` bytes, and copies it into `data`.
   * Tags are unique among one call's messages between two ranks, so messages match whatever
   * the order on each side. Returns 0, or non-zero after host->report_error() (a peer that
   * died or timed out, a size mismatch). Called on the entry's thread. NULL where the host
   * has no communicator or no point-to-point transport. */
  int32_t (*p2p)(void* user, int32_t kind, const char* group, int32_t peer, int64_t tag,
                 void* data, uint64_t bytes);
} tfc_host_api_t;

/* tfc_host_api_t.p2p's kinds. */
enum {
  TFC_P2P_SEND = 0,
  TFC_P2P_RECV = 1,
};

/* Collectives (tfc_host_api_t.collective), with the f32 element counts they take (n = the
 * group's size):
 *   ALL_REDUCE      send: count,     recv: count      recv = reduce over ranks of send;
 *                                                    send may equal recv
 *   REDUCE_SCATTER  send: count * n, recv: count      rank r gets block r of the reduction
 *   ALL_GATHER      send: count,     recv: count * n  block r of recv is rank r's send
 *   ALL_TO_ALL      send: count * n, recv: count * n  block s of rank r's recv is block r of
 *                                                    rank s's send
 *   BROADCAST       recv: count bytes from rank 0 of the group (send unused)
 *   BARRIER         no data */
enum {
  TFC_COLLECTIVE_ALL_REDUCE = 0,
  TFC_COLLECTIVE_REDUCE_SCATTER = 1,
  TFC_COLLECTIVE_ALL_GATHER = 2,
  TFC_COLLECTIVE_ALL_TO_ALL = 3,
  TFC_COLLECTIVE_BROADCAST = 4,
  TFC_COLLECTIVE_BARRIER = 5,
};
/* The key of tfc_artifact_t.metadata_json that holds the number of processes a data-parallel
 * or tensor-parallel artifact was compiled for (tfc --dp=N: N; --tp=M: M; both: N x M): the
 * runtime refuses to run it in a world of another size, before any step. Absent: one process. */
#define TFC_METADATA_WORLD_SIZE "world_size"
/* The key of tfc_artifact_t.metadata_json that lists the module state a ZeRO-1 artifact keeps
 * as one block per rank (tfc --zero=1): a string "state=param,state=param,...". Such a state
 * is 1-D, of ceil(n / world) elements, and holds elements [rank x block, (rank + 1) x block)
 * of its parameter's flattened shape (n elements), zero past n. Checkpoints hold it whole, in
 * the parameter's shape. Absent: no sharded state. */
#define TFC_METADATA_ZERO_SHARDS "zero_shards"
/* Tensor parallelism (tfc --tp=M, Megatron-LM's layout): "tp_size": M, the consecutive ranks
 * that split each layer; "tp_shards": {"<param>": [axis, blocks], ...}, the parameters (and
 * the states: the KV cache, split with the heads) each such rank holds a 1/M slice of: along `axis` of the whole tensor, which is `blocks` equal
 * parts (GPT-2's fused [Q | K | V]: 3) of which the rank t-th in its group holds the t-th M-th
 * of each. Absent: every parameter whole on every rank.
 * Both (tfc --dp=N --tp=M, world_size N x M): world rank r = d x M + t is slice t of
 * data-parallel replica d. Group "tp" (the collectives of tfc-tensor-parallel) is the M ranks
 * d x M ... d x M + M - 1; group "dp" (the gradients' mean, tfc-data-parallel) is the N ranks
 * t, t + M, ..., t + (N - 1) x M; replica d reads slice d of the global batch. With one of
 * them alone every group is the world. */
/* Pipeline parallelism (tfc --pp=S): "pp_size": S, the ranks that each run one stage of the
 * model (world rank s runs stage s, its entry "train_step.stage<s>"; every stage reads the
 * same rows of the batch); "pp_owner": {"<param or state>": s, ...}, the tensors whose
 * current value lives on stage s alone (the parameters it updates, their optimizer state),
 * which checkpoints gather from there. Tensors not listed are the same on every rank.
 * The mesh (tfc --dp=N --pp=S --tp=M, any of them 1; world_size N x S x M): world rank
 * r = (d x S + s) x M + t is tensor-parallel slice t of stage s of data-parallel replica d.
 * Group "tp" is the M ranks of (d, s), "pp" the S ranks of (d, t), "dp" the N ranks of (s, t)
 * (the 2-D layouts above are its cases S = 1 and M = 1). */
#define TFC_METADATA_PP_SIZE "pp_size"
#define TFC_METADATA_PP_OWNER "pp_owner"
/* "pp_held": {"<param or state>": [s, ...], ...}: the stages whose ranks hold a tensor, for
 * each that some stage does not touch (a rank allocates, initializes and loads only what its
 * stage holds). Tensors not listed are held by every stage. */
#define TFC_METADATA_PP_HELD "pp_held"
/* Expert parallelism (tfc --ep=N, mixture-of-experts models): "ep_size": N, the ranks that
 * each read their slice of the batch (as data parallel: world_size N) and hold E/N of every
 * layer's experts; world rank r runs the entry "train_step.ep<r>". "ep_owner" and "ep_held"
 * are as "pp_owner" and "pp_held", by rank: an expert's tensors (its weights and their
 * optimizer state) live on the rank that holds the expert. */
#define TFC_METADATA_EP_SIZE "ep_size"
#define TFC_METADATA_EP_OWNER "ep_owner"
#define TFC_METADATA_EP_HELD "ep_held"
#define TFC_METADATA_TP_SIZE "tp_size"
#define TFC_METADATA_TP_SHARDS "tp_shards"

/* Reductions; the mean is the sum divided by the group's size. */
enum {
  TFC_REDUCE_SUM = 0,
  TFC_REDUCE_MEAN = 1,
};

/* A parameter, a state tensor, or an entry point's input or output. */
typedef struct tfc_tensor_desc_t {
  const char* name;     /* the checkpoint key for parameters, the argument name for I/O */
  int32_t dtype;        /* TFC_ABI_* */
  int32_t rank;
  const int64_t* shape; /* `rank` dimensions, each >= 1 */
  const char* init;     /* initializer spec ("normal(0.0, 0.02)", "zeros", ...); I/O: "" */
  uint32_t flags;       /* TFC_TENSOR_* */
  uint32_t reserved;
} tfc_tensor_desc_t;

/* One kernel launch of an entry, for profiles: what it is and what it costs by the
 * compiler's cost model. */
typedef struct tfc_kernel_desc_t {
  const char* name;       /* the kernel ("k12_fused"); one kernel may be launched often */
  const char* ops;        /* the graph ops it computes ("fused.linear: linear, add, gelu") */
  uint64_t flops;         /* floating-point operations of one launch */
  uint64_t bytes_read;    /* bytes one launch reads from memory at least once */
  uint64_t bytes_written; /* bytes one launch writes */
} tfc_kernel_desc_t;

/* Returns 0 on success, non-zero after host->report_error(). */
typedef int32_t (*tfc_entry_fn_t)(const tfc_host_api_t* host, void* const* params,
                                  void* const* state, void* const* inputs,
                                  void* const* outputs, void* arena);

typedef struct tfc_entry_t {
  const char* name; /* "forward", "loss", "prefill", "decode", "sample", "train_step" */
  int32_t num_inputs;
  int32_t num_outputs;
  const tfc_tensor_desc_t* inputs;
  const tfc_tensor_desc_t* outputs;
  uint64_t arena_bytes;       /* scratch the caller provides */
  uint64_t num_kernels;       /* kernel launches per call, for reports */
  tfc_entry_fn_t call;
  const tfc_kernel_desc_t* kernels; /* num_kernels launches, in the order of a call */
} tfc_entry_t;

typedef struct tfc_artifact_t {
  uint32_t magic;       /* TFC_ARTIFACT_MAGIC */
  uint32_t abi_version; /* TFC_ARTIFACT_ABI_VERSION */
  uint32_t struct_size; /* sizeof(tfc_artifact_t) as the compiler knew it */
  uint32_t reserved;
  const char* target;           /* "x86_64-unknown-linux-gnu:znver4" */
  const char* compiler_version; /* "tfc 0.1.0 (LLVM 19.1.x)" */
  const char* module_hash;      /* hex digest of the input module text */
  const char* metadata_json;    /* free-form JSON: model name and config, for tools */
  int32_t num_params;
  int32_t num_state;
  int32_t num_entries;
  int32_t reserved2;
  const tfc_tensor_desc_t* params;
  const tfc_tensor_desc_t* state;
  const tfc_entry_t* entries;
  /* Where the kernels run (TFC_DEVICE_*). The rest describes a device artifact's kernels
   * and is zero for the CPU. */
  int32_t device;
  int32_t num_device_kernels;
  const char* device_arch;            /* the GPU architecture compiled for: "sm_90" */
  const char* const* device_kernels;  /* the kernels' function names in the image */
  const void* device_image;           /* the kernels as machine code for device_arch (cubin) */
  uint64_t device_image_bytes;
  const char* device_ptx;             /* the same as PTX text, for newer GPUs to compile */
} tfc_artifact_t;

typedef const tfc_artifact_t* (*tfc_artifact_get_fn_t)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TFC_ARTIFACT_ABI_H_ */
