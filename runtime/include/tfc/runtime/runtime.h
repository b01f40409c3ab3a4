/* The tfc runtime's C API: load a compiled model (an artifact, model.so), hold its
 * parameters, and call its entry points.
 *
 *   tfc_loaded_artifact_t* artifact = NULL;
 *   tfc_status_t status = tfc_artifact_open("model.so", NULL, &artifact);
 *   tfc_params_t* params = NULL;
 *   if (!status) status = tfc_params_create(artifact, NULL, &params);
 *   if (!status) status = tfc_params_load_safetensors(params, "model.safetensors", NULL);
 *   tfc_context_t* context = NULL;
 *   if (!status) status = tfc_context_create(artifact, params, NULL, &context);
 *   if (!status) status = tfc_context_call(context, "forward", inputs, 1, outputs, 1);
 *   if (status) { fprintf(stderr, "%s\n", tfc_status_message(status)); tfc_status_free(status); }
 *   tfc_context_release(context); tfc_params_release(params); tfc_artifact_release(artifact);
 *
 * Conventions (as in IREE's runtime):
 *   - Objects are opaque, reference-counted handles: *_create and *_open return a handle with
 *     one reference, *_retain adds one, *_release drops one (NULL is accepted) and frees the
 *     object with the last. An object keeps alive what it was made from: params retain
 *     their artifact, a context retains its artifact and params, so release order is free.
 *   - Options are plain structs: call *_options_initialize() and change what you need.
 *     Passing NULL for options means the defaults.
 *   - Functions that can fail return a tfc_status_t (NULL = success; see status.h) and
 *     write results through out_ parameters, which are left untouched on failure.
 *   - Memory for tensors (parameters, state, arenas) comes from a tfc_allocator_t given in
 *     the options; the default is the C library's aligned allocator.
 *
 * Thread-safety, per type:
 *   - tfc_loaded_artifact_t is immutable once open: every query may be made from any thread.
 *   - tfc_params_t: reads (tfc_params_tensor, calls through contexts) may run concurrently;
 *     anything that writes the values (load, init, set, and entry points that update
 *     parameters in place, such as train_step) needs exclusive access to the params.
 *   - tfc_context_t is used by one thread at a time. Distinct contexts may call entry
 *     points concurrently (each owns its state, arenas and threads), sharing params for
 *     reading.
 *   - Retain/release are thread-safe on every type.
 *
 * "tfc_artifact_t" is the artifact's own table (artifact_abi.h); tfc_loaded_artifact_t is
 * the runtime's handle around a loaded one.
 */
#ifndef TFC_RUNTIME_RUNTIME_H_
#define TFC_RUNTIME_RUNTIME_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfc/artifact_abi.h"
#include "tfc/runtime/dtype.h"
#include "tfc/runtime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===
 * Allocator
 *===----------------------------------------------------------------------===*/

/* Where the runtime takes tensor memory from. |allocate| returns |byte_size| bytes (at
 * least 1) aligned to |alignment| (a power of two, at least TFC_ARENA_ALIGNMENT), or NULL
 * when it cannot; |deallocate| gives back a pointer |allocate| returned. Both may be
 * called from any thread that uses an object made with this allocator; |self| is passed
 * back unchanged and must outlive every object made with the allocator. */
typedef struct tfc_allocator_t {
  void* self;
  void* (*allocate)(void* self, size_t byte_size, size_t alignment);
  void (*deallocate)(void* self, void* pointer);
} tfc_allocator_t;

/* The default allocator: posix_memalign and free; a buffer of 2 MiB or more is aligned to
 * 2 MiB and advised to use transparent huge pages (madvise MADV_HUGEPAGE). */
tfc_allocator_t tfc_allocator_system(void);

/*===----------------------------------------------------------------------===
 * Host tensors passed across the API
 *===----------------------------------------------------------------------===*/

/* A borrowed, dense, row-major tensor in host memory. The caller owns |shape| and |data|;
 * they must stay valid for the duration of the call they are passed to. */
typedef struct tfc_tensor_ref_t {
  tfc_dtype_t dtype;
  int32_t rank;
  const int64_t* shape; /* |rank| dimensions; may be NULL when rank is 0 */
  void* data;
  size_t byte_size;     /* must equal the size implied by dtype and shape */
} tfc_tensor_ref_t;

/* Returns the byte size of a tensor with |desc|'s dtype and shape (0 if invalid). */
uint64_t tfc_tensor_desc_byte_size(const tfc_tensor_desc_t* desc);

/*===----------------------------------------------------------------------===
 * Artifacts
 *===----------------------------------------------------------------------===*/

typedef struct tfc_loaded_artifact_s tfc_loaded_artifact_t;

typedef struct tfc_artifact_options_t {
  /* Skip parsing the parameters' and state's initializer specs at open time (they are then
   * checked by tfc_params_init / tfc_context_create instead). Default false. */
  bool skip_init_spec_check;
} tfc_artifact_options_t;

void tfc_artifact_options_initialize(tfc_artifact_options_t* out_options);

/* Loads the compiled model at |path|. Before dlopen(RTLD_NOW | RTLD_LOCAL) the file must
 * exist, be a regular file and start with the ELF magic; after it, the file must export
 * TFC_ARTIFACT_SYMBOL, and the table must carry TFC_ARTIFACT_MAGIC, this runtime's
 * TFC_ARTIFACT_ABI_VERSION and a large enough struct_size, and be well formed (non-empty
 * unique names, ranks 0..8, dimensions >= 1, known dtypes, non-null entry points, valid
 * initializer specs). Every refusal names the file and the reason (a version mismatch says
 * both versions and to recompile the model with this tfc). */
tfc_status_t tfc_artifact_open(const char* path, const tfc_artifact_options_t* options,
                               tfc_loaded_artifact_t** out_artifact);
void tfc_artifact_retain(tfc_loaded_artifact_t* artifact);
/* Unloads the shared object with the last reference. */
void tfc_artifact_release(tfc_loaded_artifact_t* artifact);

/* Queries. Strings are owned by the artifact and live as long as it does. */
const char* tfc_artifact_path(const tfc_loaded_artifact_t* artifact);
const char* tfc_artifact_target(const tfc_loaded_artifact_t* artifact);
const char* tfc_artifact_compiler_version(const tfc_loaded_artifact_t* artifact);
const char* tfc_artifact_module_hash(const tfc_loaded_artifact_t* artifact);
const char* tfc_artifact_metadata_json(const tfc_loaded_artifact_t* artifact); /* "" if none */
/* The validated table itself, for everything else. */
const tfc_artifact_t* tfc_artifact_table(const tfc_loaded_artifact_t* artifact);

int32_t tfc_artifact_param_count(const tfc_loaded_artifact_t* artifact);
/* Returns parameter |index| (0 <= index < count), or NULL when out of range. */
const tfc_tensor_desc_t* tfc_artifact_param(const tfc_loaded_artifact_t* artifact,
                                            int32_t index);
int32_t tfc_artifact_state_count(const tfc_loaded_artifact_t* artifact);
const tfc_tensor_desc_t* tfc_artifact_state(const tfc_loaded_artifact_t* artifact,
                                            int32_t index);
int32_t tfc_artifact_entry_count(const tfc_loaded_artifact_t* artifact);
const tfc_entry_t* tfc_artifact_entry(const tfc_loaded_artifact_t* artifact, int32_t index);

/* Looks a parameter up by name; NOT_FOUND suggests the closest name. */
tfc_status_t tfc_artifact_find_param(const tfc_loaded_artifact_t* artifact, const char* name,
                                     int32_t* out_index);
/* Looks an entry point up by name; NOT_FOUND lists the entries (and the closest one). */
tfc_status_t tfc_artifact_find_entry(const tfc_loaded_artifact_t* artifact, const char* name,
                                     int32_t* out_index);

/*===----------------------------------------------------------------------===
 * Parameters
 *===----------------------------------------------------------------------===*/

/* The values of an artifact's parameters (weights), in the artifact's order, each in its
 * own TFC_ARENA_ALIGNMENT-aligned storage: a buffer from the allocator, or a piece of a
 * private copy-on-write mapping of the file it was loaded from (see
 * tfc_params_load_safetensors). Storage is given when first needed and never moves
 * afterwards, so pointers from tfc_params_tensor stay valid and see later loads, sets and
 * training steps for as long as the params live. A parameter is "unset" until loaded, set
 * or initialized; calling an entry point with unset parameters fails. */
typedef struct tfc_params_s tfc_params_t;

typedef struct tfc_params_options_t {
  tfc_allocator_t allocator; /* default: tfc_allocator_system() */
} tfc_params_options_t;

void tfc_params_options_initialize(tfc_params_options_t* out_options);

/* Creates the parameters of |artifact|, all unset. Their storage is allocated (zero-filled)
 * when first needed (tfc_params_tensor, set, init, a load that copies, a context), not
 * here, so that a load can map the file instead. */
tfc_status_t tfc_params_create(tfc_loaded_artifact_t* artifact,
                               const tfc_params_options_t* options, tfc_params_t** out_params);
void tfc_params_retain(tfc_params_t* params);
void tfc_params_release(tfc_params_t* params);

tfc_loaded_artifact_t* tfc_params_artifact(const tfc_params_t* params);

/* Describes parameter |index|'s storage (writable: the caller may fill it in place, then
 * call tfc_params_mark_set), giving it zero-filled storage when it has none yet (so
 * OUT_OF_MEMORY is possible). INVALID_ARGUMENT when out of range; FAILED_PRECONDITION for a
 * parameter this process does not hold (tfc_params_is_held). */
tfc_status_t tfc_params_tensor(tfc_params_t* params, int32_t index, tfc_tensor_ref_t* out_tensor);
/* Returns whether this process holds parameter |index|: true, except under pipeline
 * parallelism (tfc --pp) for the parameters of other stages, which have no storage here;
 * initializing, loading, setting or marking one of those only marks it set. */
bool tfc_params_is_held(const tfc_params_t* params, int32_t index);
/* Returns whether parameter |index| has been loaded, set or initialized. */
bool tfc_params_is_set(const tfc_params_t* params, int32_t index);
/* Declares parameter |index| set after the caller filled it through tfc_params_tensor. */
tfc_status_t tfc_params_mark_set(tfc_params_t* params, int32_t index);
/* Returns OK when every parameter is set; otherwise FAILED_PRECONDITION naming them. */
tfc_status_t tfc_params_check_all_set(const tfc_params_t* params);

/* Copies |value| into parameter |index|, checking its dtype and shape. */
tfc_status_t tfc_params_set(tfc_params_t* params, int32_t index, const tfc_tensor_ref_t* value);

/* Fills every parameter from its initializer spec (zeros, ones, constant(v),
 * normal(mean, std), uniform(lo, hi), orthogonal(gain)). The values depend only on |seed|,
 * the parameter's index, spec, dtype and shape: a SplitMix64 stream seeded with
 * (seed, index) feeds uniform draws and Box-Muller normals, drawn in double; orthogonal
 * runs modified Gram-Schmidt on a normal matrix in double. */
tfc_status_t tfc_params_init(tfc_params_t* params, uint64_t seed);

typedef struct tfc_params_load_options_t {
  /* Leave parameters the file does not have as they are, instead of failing. */
  bool allow_missing;
  /* Ignore tensors of the file that are not parameters, instead of failing. */
  bool allow_unexpected;
  /* Copy every tensor into allocated storage instead of mapping the file: read from the
   * file (pread), never through the mapping, so the peak stays at about the weights. For a
   * file that may be rewritten in place (not replaced by rename) while the params live, and
   * for speed: the system allocator puts buffers of 2 MiB or more on transparent huge pages,
   * which decode streams faster than the page cache's 4 KiB pages (docs/runtime.md). A
   * read that fails (the file truncated meanwhile) returns IO_ERROR with the parameters
   * read before it already set. Default false. */
  bool copy;
} tfc_params_load_options_t;

void tfc_params_load_options_initialize(tfc_params_load_options_t* out_options);

/* Binds parameters by name from the safetensors file at |path|. Refused (naming the file and
 * each tensor, nothing changed): a missing parameter, an unexpected tensor (with the closest
 * parameter name as a suggestion), a wrong shape or a wrong dtype.
 *
 * Unless options->copy, the file is mapped private and copy-on-write (MAP_PRIVATE,
 * PROT_READ | PROT_WRITE), and a parameter that has no storage yet and whose tensor starts
 * TFC_ARENA_ALIGNMENT-aligned in the file (writeSafetensors aligns every tensor whose size
 * is a multiple of 64) uses the tensor in place: the weights are read from the page cache
 * and held once, not read and copied. Writing such a parameter (train_step, set, init, a
 * caller through tfc_params_tensor's pointer) copies the pages it writes for this process
 * alone; the file never changes. Any other parameter is copied, as with options->copy. The
 * mapping lives as long as the params. A file rewritten in place while mapped changes the
 * parameters not yet written, and one truncated makes reading them raise SIGBUS: writers
 * of this library replace files by rename, which is safe; pass options->copy otherwise.
 *
 * A tensor-parallel artifact (tfc --tp=M) takes the whole tensors, as one process does: a
 * parameter it holds a slice of is read whole (a copy, never in place) and this rank keeps
 * its slice (the world communicator's rank modulo M); or a file of this rank's slices, as
 * the artifact's shapes say. tfc_params_load_pretrained takes the whole tensors so too. */
tfc_status_t tfc_params_load_safetensors(tfc_params_t* params, const char* path,
                                         const tfc_params_load_options_t* options);

/* A checkpoint tensor as tfc_params_load_pretrained found it, reported to the caller. */
typedef struct tfc_pretrained_tensor_t {
  const char* name;    /* its name in the checkpoint */
  const char* file;    /* the safetensors file that holds it, as opened */
  tfc_dtype_t dtype;   /* its dtype there; converted when not the parameter's */
  int32_t param_index; /* the parameter it was loaded into, or -1: not a parameter, skipped */
} tfc_pretrained_tensor_t;

typedef struct tfc_pretrained_load_options_t {
  /* As tfc_params_load_options_t.copy: copy every tensor instead of using aligned tensors
   * of the parameter's dtype in place from a copy-on-write mapping. Default false. */
  bool copy;
  /* Called once for every tensor of the checkpoint after a successful load (never on
   * failure), shard by shard, each's tensors by name; the strings live during the call
   * only. May be NULL (default). This is how a caller learns which tensors were skipped
   * and which were converted. */
  void (*on_tensor)(void* user_data, const tfc_pretrained_tensor_t* tensor);
  void* user_data;
} tfc_pretrained_load_options_t;

void tfc_pretrained_load_options_initialize(tfc_pretrained_load_options_t* out_options);

/* Loads a Hugging Face checkpoint as `save_pretrained` wrote it, unchanged. |path| is
 *   - a directory holding model.safetensors, or else model.safetensors.index.json with its
 *     shards ({"metadata": {...}, "weight_map": {"tensor": "shard file", ...}}; a shard is a
 *     path relative to the directory that may not leave it: absolute paths and ".." are
 *     refused; symbolic links, as in the Hugging Face cache, are followed);
 *   - an index file (a path ending in ".json"), its shards next to it;
 *   - a single .safetensors file.
 * Unlike tfc_params_load_safetensors, which wants the artifact's own names and dtypes:
 *   - Names: a parameter takes the tensor of its name. Else a tensor "P.N" binds parameter
 *     "N" when P is a single leading component without dots ("transformer.wte.weight" for
 *     "wte.weight": GPT2LMHeadModel saves its body under "transformer."); two such
 *     candidates for one parameter are an error.
 *   - Tensors that bind no parameter (buffers such as "h.0.attn.bias" or "rotary_emb.
 *     inv_freq", a tied "lm_head.weight" the model does not have) are skipped, never an
 *     error; options->on_tensor reports them.
 *   - Dtypes: F32, BF16 and F16 tensors are converted on load to the parameter's dtype
 *     (widening exactly; narrowing to nearest, ties to even, NaN kept). A converted tensor is
 *     copied; a tensor of the parameter's dtype is held as tfc_params_load_safetensors holds
 *     it (in place from a copy-on-write mapping when aligned, unless options->copy).
 * Refused, nothing changed, every problem listed in one error naming the checkpoint: a
 * parameter the checkpoint lacks (with its dtype and shape), a shape that differs or a
 * dtype that does not convert (I64, BOOL, F64, ...; naming the tensor, its file, what was
 * found and what was expected); for an index, malformed JSON (file:line:column), no
 * "weight_map", a tensor listed twice, a shard path that is absolute or leaves the
 * directory, a shard that cannot be read (naming a tensor it should hold), a listed tensor
 * absent from its shard, and a tensor present in two shards.
 *
 * Memory: every shard is mapped (address space, not memory) and its header checked before
 * anything changes; the data is then read one shard at a time, and the pages of tensors that
 * were copied or converted are dropped right after, so that the peak is the parameters plus
 * about one tensor. A shard none of whose tensors is used in place is unmapped when its turn
 * is over. */
tfc_status_t tfc_params_load_pretrained(tfc_params_t* params, const char* path,
                                        const tfc_pretrained_load_options_t* options);

/* Writes every parameter to a safetensors file at |path|, atomically. All must be set. */
tfc_status_t tfc_params_save_safetensors(const tfc_params_t* params, const char* path);

/*===----------------------------------------------------------------------===
 * Contexts: state, arenas and threads for calling entry points
 *===----------------------------------------------------------------------===*/

/* A session with a model: owns the module state (KV cache, optimizer moments), initialized
 * from the state's init specs, one scratch arena per entry point (allocated at its first
 * call and reused) and a thread pool that compiled code uses through
 * tfc_host_api_t.parallel_for. */
typedef struct tfc_context_s tfc_context_t;

/* The most threads a context may have. A larger num_threads is refused (a typo such as
 * 10**6 would otherwise start threads until the system runs out), and the all-cores
 * default is capped to it; a thread the system refuses to start (a process or memory
 * limit) makes tfc_context_create fail with TFC_OUT_OF_MEMORY rather than abort. */
#define TFC_CONTEXT_MAX_THREADS 1024

typedef struct tfc_context_options_t {
  tfc_allocator_t allocator; /* state and arenas; default: tfc_allocator_system() */
  /* Threads for parallel_for, the calling thread included: 0 (default) means
   * std::thread::hardware_concurrency() (at most TFC_CONTEXT_MAX_THREADS), 1 runs
   * everything on the calling thread; above TFC_CONTEXT_MAX_THREADS is refused. */
  int32_t num_threads;
  /* Seed for state tensors with random initializers (rare; KV caches are zeros). */
  uint64_t state_seed;
  /* Which GPU runs a CUDA artifact (ignored for CPU artifacts): 0 is the first; -1, the
   * default, is the node-local rank of an MPI job (OMPI_COMM_WORLD_LOCAL_RANK,
   * MPI_LOCALRANKID or SLURM_LOCALID) modulo the GPUs' count, so GPU 0 outside one. */
  int32_t device;
} tfc_context_options_t;

void tfc_context_options_initialize(tfc_context_options_t* out_options);

/* Creates a context for |artifact| with |params| (which must belong to |artifact|; they
 * need not be set yet, only before the first call). */
tfc_status_t tfc_context_create(tfc_loaded_artifact_t* artifact, tfc_params_t* params,
                                const tfc_context_options_t* options,
                                tfc_context_t** out_context);
void tfc_context_retain(tfc_context_t* context);
void tfc_context_release(tfc_context_t* context);

/* The artifact and params the context was made with (not retained for the caller). */
tfc_loaded_artifact_t* tfc_context_artifact(const tfc_context_t* context);
tfc_params_t* tfc_context_params(const tfc_context_t* context);
/* The number of threads parallel_for uses. */
int32_t tfc_context_num_threads(const tfc_context_t* context);
/* Where the context runs its artifact: "cpu", or for a CUDA artifact the GPU and what runs
 * its matrix products: "GPU 0: NVIDIA H200 (sm_90); products on cuBLASLt 13.1.0". */
const char* tfc_context_device_name(const tfc_context_t* context);
/* The bytes of device memory a GPU context holds so far (0 on the CPU): parameters, state,
 * the arena and staging buffers of each entry called so far, constants and the products'
 * workspace; what a GPU profiler calls the peak of its allocations, since none is freed
 * before the context. The CUDA context's own memory is not counted. */
uint64_t tfc_context_device_bytes(const tfc_context_t* context);

/* Contexts on a GPU (CUDA artifacts) keep device copies of the parameters and the state.
 * The host copies stay the ones the API hands out: tfc_context_state_tensor and
 * tfc_context_save_state_safetensors first copy the state back from the GPU, and
 * tfc_context_download also copies the parameters back into the params' buffers (call it
 * before reading or saving parameters that train_step changed). After changing
 * parameters or state on the host (other than through this API's loads and resets, which
 * do it themselves), call tfc_context_upload: the next call copies them to the GPU. Both
 * do nothing for CPU artifacts, whose entries work on the host copies directly. */
tfc_status_t tfc_context_download(tfc_context_t* context);
tfc_status_t tfc_context_upload(tfc_context_t* context);
/* Bytes of arena memory allocated so far (entry points called at least once). */
uint64_t tfc_context_arena_bytes_allocated(const tfc_context_t* context);

/* Per-kernel timing, as `tfc-run MODEL.so profile` shows it. While enabled, every call of
 * an entry adds the wall-clock time of each of its kernel launches to the context's totals
 * (two clock reads per launch; the launches are the entry's tfc_entry_t.kernels, in call
 * order). Enabling or disabling clears the totals. */
tfc_status_t tfc_context_set_profiling(tfc_context_t* context, bool enabled);

/* The totals of entry |entry_index| since profiling was enabled: out_seconds[i] (|count|
 * slots, at least the entry's num_kernels; the rest are zeroed) is launch i's time summed
 * over the calls, *out_calls (may be NULL) the number of successful calls. An artifact
 * without a kernel table (kernels NULL) has no launches to report. FAILED_PRECONDITION
 * while profiling is off. */
tfc_status_t tfc_context_kernel_times(const tfc_context_t* context, int32_t entry_index,
                                      double* out_seconds, size_t count,
                                      uint64_t* out_calls);

/* Re-initializes every state tensor from its init spec (a new generation starts with an
 * empty KV cache). */
tfc_status_t tfc_context_reset_state(tfc_context_t* context);
/* Describes state tensor |index|'s storage (writable). */
tfc_status_t tfc_context_state_tensor(tfc_context_t* context, int32_t index,
                                      tfc_tensor_ref_t* out_tensor);
/* Replaces the state from a safetensors file (every state tensor, by name, with dtype and
 * shape checks; an unexpected tensor is an error). Nothing changes on failure. */
tfc_status_t tfc_context_load_state_safetensors(tfc_context_t* context, const char* path);
/* Writes the state to a safetensors file at |path|, atomically. */
tfc_status_t tfc_context_save_state_safetensors(const tfc_context_t* context, const char* path);

/* Calls entry point |entry_name| with |inputs| and |outputs| in the entry's order. Each
 * tensor's dtype and shape must equal the entry's description, and no two buffers may
 * overlap. The outputs are written in place; the state is updated. A run-time error that
 * compiled code reports (host->report_error) comes back as a status with its message. */
tfc_status_t tfc_context_call(tfc_context_t* context, const char* entry_name,
                              const tfc_tensor_ref_t* inputs, size_t num_inputs,
                              const tfc_tensor_ref_t* outputs, size_t num_outputs);
/* The same with the entry's index (see tfc_artifact_find_entry). */
tfc_status_t tfc_context_call_index(tfc_context_t* context, int32_t entry_index,
                                    const tfc_tensor_ref_t* inputs, size_t num_inputs,
                                    const tfc_tensor_ref_t* outputs, size_t num_outputs);
/* For a context on a GPU (a CUDA artifact): the same with inputs and outputs in the GPU's
 * memory (each `data` a CUdeviceptr of the context's device, cast to void*), read and
 * written in place without copies. The call returns when the GPU is done. Repeated calls
 * on the same buffers replay one CUDA graph. FAILED_PRECONDITION for a CPU context. */
tfc_status_t tfc_context_call_device(tfc_context_t* context, int32_t entry_index,
                                     const tfc_tensor_ref_t* inputs, size_t num_inputs,
                                     const tfc_tensor_ref_t* outputs, size_t num_outputs);

/*===----------------------------------------------------------------------===
 * Generation: prefill, sample, decode (tfc::Generator, generator.hpp)
 *===----------------------------------------------------------------------===*/

/* Generates tokens with a decoder-only model's prefill, decode and sample entries: the
 * prompt in chunks through prefill, then step i samples with seed + i and decodes the token
 * at the next position, until a stop condition. Each generate call starts at position 0.
 * Used by one thread at a time (it uses its context); it keeps the context alive. */
typedef struct tfc_generator_s tfc_generator_t;

typedef struct tfc_generator_options_t {
  /* A tokenizer: "bytes", a Hugging Face tokenizer.json (or its folder), or a GPT-2 BPE
   * folder (vocab.json, merges.txt); NULL (default) for none. With one, text prompts are accepted, tokens come with their bytes and generation
   * stops at its end-of-text token. */
  const char* tokenizer;
} tfc_generator_options_t;

void tfc_generator_options_initialize(tfc_generator_options_t* out_options);

typedef struct tfc_generate_options_t {
  int64_t max_new_tokens; /* >= 1; default 16 */
  float temperature;      /* 0 (default): greedy; > 0: sample from softmax(logits / T) */
  int32_t top_k;          /* 0 (default): no top-k filter */
  float top_p;            /* 1 (default): no top-p filter; in (0, 1] */
  int64_t seed;           /* step i samples with seed + i; default 0 */
  /* Generation also stops after any of these ids (default none). */
  const int32_t* stop_tokens;
  size_t num_stop_tokens;
  bool stop_at_end_of_text; /* at the tokenizer's end-of-text token; default true */
} tfc_generate_options_t;

void tfc_generate_options_initialize(tfc_generate_options_t* out_options);

typedef enum tfc_stop_reason_e {
  TFC_STOP_MAX_NEW_TOKENS = 0,
  TFC_STOP_CONTEXT_LIMIT = 1, /* the next token would not fit the model's n_ctx */
  TFC_STOP_END_OF_TEXT = 2,
  TFC_STOP_STOP_TOKEN = 3,
  TFC_STOP_CALLBACK = 4, /* the token callback returned false */
} tfc_stop_reason_t;

typedef struct tfc_generate_stats_t {
  int64_t prompt_tokens;
  int64_t generated_tokens; /* the token that stopped generation included */
  int64_t prefill_calls, decode_calls, sample_calls;
  double prefill_ms, decode_ms, sample_ms, total_ms; /* wall clock */
  double prefill_tokens_per_second, decode_tokens_per_second;
  tfc_stop_reason_t stop_reason;
  int32_t last_token;
} tfc_generate_stats_t;

/* Called with each generated token and, with a tokenizer, its bytes (NULL and 0 otherwise,
 * and for the end-of-text token); valid during the call only. Return false to stop. */
typedef bool (*tfc_token_callback_t)(void* user_data, int32_t token, const char* bytes,
                                     size_t num_bytes);

/* Binds |context|'s prefill, decode and sample entries (their signatures are checked) and
 * reads n_ctx from the model's metadata. */
tfc_status_t tfc_generator_create(tfc_context_t* context, const tfc_generator_options_t* options,
                                  tfc_generator_t** out_generator);
void tfc_generator_destroy(tfc_generator_t* generator); /* NULL is accepted */

/* The model's generation batch (rows all run the same prompt; row 0 is reported), prefill
 * chunk, vocabulary size and context length (n_ctx). */
int64_t tfc_generator_batch(const tfc_generator_t* generator);
int64_t tfc_generator_prefill_chunk(const tfc_generator_t* generator);
int64_t tfc_generator_vocab_size(const tfc_generator_t* generator);
int64_t tfc_generator_context_length(const tfc_generator_t* generator);

/* Generates a continuation of the |prompt_length| ids at |prompt|, calling |callback| (may
 * be NULL) with each token; |options| NULL means the defaults; |out_stats| may be NULL. */
tfc_status_t tfc_generator_generate(tfc_generator_t* generator, const int32_t* prompt,
                                    size_t prompt_length, const tfc_generate_options_t* options,
                                    tfc_token_callback_t callback, void* user_data,
                                    tfc_generate_stats_t* out_stats);
/* The same with a text prompt of |length| bytes, encoded by the generator's tokenizer after
 * its BOS token, when it has one (FAILED_PRECONDITION without a tokenizer). */
tfc_status_t tfc_generator_generate_text(tfc_generator_t* generator, const char* text,
                                         size_t length, const tfc_generate_options_t* options,
                                         tfc_token_callback_t callback, void* user_data,
                                         tfc_generate_stats_t* out_stats);

/*===----------------------------------------------------------------------===
 * Batched generation: continuous batching (tfc::BatchedGenerator, batched_generator.hpp)
 *===----------------------------------------------------------------------===*/

/* Many requests at once on a model traced with a generation batch G > 1 (its decode_rows and
 * prefill_row entries): up to G run together, each in its own row at its own position, and
 * queued ones take a row as soon as one frees up. Each request gets the tokens
 * tfc_generator_generate gives it alone. tfc_batched_generator_submit and _cancel may be
 * called from any thread; _step and _run_until_idle from one thread at a time, where the
 * callbacks run. It keeps its context alive. */
typedef struct tfc_batched_generator_s tfc_batched_generator_t;

typedef struct tfc_request_result_t {
  int64_t id;
  int64_t row; /* -1: it never ran (cancelled while queued) */
  int64_t prompt_tokens, generated_tokens;
  tfc_stop_reason_t stop_reason;
  bool cancelled;
  const char* error; /* why the model failed, ending the request; NULL if it did not */
  double queued_ms, first_token_ms, total_ms; /* from submit */
  const int32_t* tokens; /* the generated ids (generated_tokens of them) */
} tfc_request_result_t;

/* Called once when a request ends; |result| is valid during the call only. */
typedef void (*tfc_request_done_callback_t)(void* user_data, const tfc_request_result_t* result);

/* Binds |context|'s decode_rows, prefill_row and sample entries. FAILED_PRECONDITION naming
 * what is missing for a model traced with gen_batch 1. |options| as the generator's. */
tfc_status_t tfc_batched_generator_create(tfc_context_t* context,
                                          const tfc_generator_options_t* options,
                                          tfc_batched_generator_t** out_generator);
void tfc_batched_generator_destroy(tfc_batched_generator_t* generator); /* NULL is accepted */

/* G, the requests that run at once. */
int64_t tfc_batched_generator_rows(const tfc_batched_generator_t* generator);

/* Queues a request (the prompt is copied) and writes its id. |callback| (may be NULL) gets
 * each token, |done| (may be NULL) the result; both with |user_data|. INVALID_ARGUMENT for a
 * prompt or options that tfc_generator_generate would refuse. */
tfc_status_t tfc_batched_generator_submit(tfc_batched_generator_t* generator,
                                          const int32_t* prompt, size_t prompt_length,
                                          const tfc_generate_options_t* options,
                                          tfc_token_callback_t callback,
                                          tfc_request_done_callback_t done, void* user_data,
                                          int64_t* out_id);
/* Ends request |id| at the next step; false if no such request is queued or running. */
bool tfc_batched_generator_cancel(tfc_batched_generator_t* generator, int64_t id);
/* Requests waiting for a row, and those in rows. */
int64_t tfc_batched_generator_queued(const tfc_batched_generator_t* generator);
int64_t tfc_batched_generator_running(const tfc_batched_generator_t* generator);
/* One step: admit queued requests into free rows, a prefill chunk of each request still
 * reading its prompt, one decode of every generating row. */
tfc_status_t tfc_batched_generator_step(tfc_batched_generator_t* generator);
/* Steps until nothing is queued or running. */
tfc_status_t tfc_batched_generator_run_until_idle(tfc_batched_generator_t* generator);

/*===----------------------------------------------------------------------===
 * Training: batches, schedule, evaluation, checkpoints (tfc::Trainer, trainer.hpp)
 *===----------------------------------------------------------------------===*/

/* Trains a decoder-only model compiled with an optimizer on a flat token file (nanoGPT-style
 * seeded batches, the compiled train_step), with evaluation on held-out tokens, atomic
 * checkpoints that resume bit-identically, and a CSV log. Used by one thread at a time,
 * except tfc_trainer_request_stop; it keeps its context alive. */
typedef struct tfc_trainer_s tfc_trainer_t;

/* The run-time hyper-parameters of train_step (the schedule's length comes from the
 * options' total_steps). */
typedef struct tfc_hyper_params_t {
  double lr;            /* peak learning rate; default 3e-4 */
  double min_lr;        /* at the end of the decay; default 0 */
  double warmup;        /* linear warm-up steps; default 0 */
  int32_t schedule;     /* 0 constant (default), 1 warm-up + linear decay, 2 + cosine */
  double weight_decay;  /* default 0.1 */
  double grad_clip;     /* global norm; <= 0 off; default 1 */
  double beta1, beta2, eps; /* AdamW: defaults 0.9, 0.95, 1e-8 */
  double momentum;          /* SGD: default 0.9 */
} tfc_hyper_params_t;

typedef enum tfc_token_file_dtype_e {
  TFC_TOKEN_FILE_UINT16 = 0,
  TFC_TOKEN_FILE_UINT32 = 1,
} tfc_token_file_dtype_t;

typedef struct tfc_trainer_options_t {
  const char* data_path;            /* .bin (headerless or llm.c) or 1-D .npy; required */
  tfc_token_file_dtype_t data_dtype; /* of headerless .bin files; default uint16 */
  const char* eval_data_path;       /* held-out tokens; NULL (default): no evaluation */
  int64_t eval_every;               /* default 100 */
  int64_t eval_batches;             /* default 20 */
  int64_t steps;                    /* the step to reach; required */
  int64_t total_steps;              /* the schedule's length; 0 (default): steps */
  uint64_t seed;                    /* the batch sampler's; default 1337 */
  tfc_hyper_params_t hyper;
  const char* save_path;            /* the checkpoint; NULL (default): never saves */
  int64_t save_every;               /* also save every K steps; 0 (default): at the end */
  const char* log_path;             /* CSV log; NULL (default): none */
} tfc_trainer_options_t;

void tfc_trainer_options_initialize(tfc_trainer_options_t* out_options);

typedef enum tfc_train_event_e {
  TFC_TRAIN_STEP = 0,  /* a step (and its evaluation) is done; a save may follow */
  TFC_TRAIN_SAVED = 1, /* a checkpoint of this step was written */
} tfc_train_event_t;

typedef struct tfc_train_progress_t {
  tfc_train_event_t event;
  int64_t step, last_step;
  double loss, lr, grad_norm; /* lr, grad_norm NaN when train_step does not output them */
  double tokens_per_second, smoothed_tokens_per_second;
  double eval_loss; /* NaN when not evaluated at this step */
  double elapsed_seconds, eta_seconds;
  bool stopping; /* a stop was requested: this is the last step */
  bool diverged; /* a NaN or infinite loss: the run fails after this call */
} tfc_train_progress_t;

/* Return false to stop after this step (saving it, as tfc_trainer_request_stop). */
typedef bool (*tfc_train_progress_callback_t)(void* user_data,
                                             const tfc_train_progress_t* progress);

/* Binds |context|'s train_step (and loss entry with eval data) and opens and checks the data.
 * Set the parameters (init, weights) before running, or resume. */
tfc_status_t tfc_trainer_create(tfc_context_t* context, const tfc_trainer_options_t* options,
                                tfc_trainer_t** out_trainer);
void tfc_trainer_destroy(tfc_trainer_t* trainer); /* NULL is accepted */
/* Loads a checkpoint of this model: parameters, state, step, sampler position and seed. */
tfc_status_t tfc_trainer_resume(tfc_trainer_t* trainer, const char* checkpoint_path);
/* The step of the parameters: 0, the resumed checkpoint's, or the last one trained. */
int64_t tfc_trainer_step(const tfc_trainer_t* trainer);
/* Trains up to the options' steps; |callback| may be NULL. |out_stopped| (may be NULL) says
 * whether a stop request ended the run early. */
tfc_status_t tfc_trainer_run(tfc_trainer_t* trainer, tfc_train_progress_callback_t callback,
                             void* user_data, bool* out_stopped);
/* Asks a running tfc_trainer_run to save and return after the current step.
 * Async-signal-safe. */
void tfc_trainer_request_stop(tfc_trainer_t* trainer);
/* Writes a checkpoint of the current step to the options' save_path. */
tfc_status_t tfc_trainer_save(tfc_trainer_t* trainer);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* TFC_RUNTIME_RUNTIME_H_ */
