/* Status values for the tfc runtime's C API.
 *
 * A tfc_status_t is either NULL, meaning success, or a heap-allocated error that carries a
 * code and a message. Every function that can fail returns one; the caller owns a non-NULL
 * status and must release it with tfc_status_free(). Messages name the file (or object)
 * and the problem, e.g.
 *   "model.safetensors: tensor 'wte.weight' has data_offsets [0, 100] but dtype F32 and
 *    shape [50257, 768] need 154389504 bytes"
 *
 * Thread-safety: a status is an immutable value once made; distinct statuses may be used
 * from different threads freely, one status must not be freed twice.
 */
#ifndef TFC_RUNTIME_STATUS_H_
#define TFC_RUNTIME_STATUS_H_

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TFC_PRINTF_FORMAT(fmt_index, args_index) \
  __attribute__((format(printf, fmt_index, args_index)))
#else
#define TFC_PRINTF_FORMAT(fmt_index, args_index)
#endif

/* Error categories. The numeric values are part of the ABI: append, never renumber. */
typedef enum tfc_status_code_e {
  TFC_OK = 0,
  TFC_INVALID_ARGUMENT = 1,   /* the caller passed something unusable */
  TFC_NOT_FOUND = 2,          /* a file, tensor or entry point does not exist */
  TFC_IO_ERROR = 3,           /* the operating system refused a read or a write */
  TFC_DATA_LOSS = 4,          /* a file is corrupt, truncated or malformed */
  TFC_UNIMPLEMENTED = 5,      /* valid input that tfc does not support (yet) */
  TFC_OUT_OF_MEMORY = 6,      /* an allocation failed */
  TFC_FAILED_PRECONDITION = 7,/* the system is not in a state to do this */
  TFC_INTERNAL = 8,           /* a bug in tfc */
} tfc_status_code_t;

typedef struct tfc_status_s* tfc_status_t;

/* Returns the code of |status|; TFC_OK for NULL. */
tfc_status_code_t tfc_status_code(tfc_status_t status);

/* Returns the message of |status|, owned by the status; "" for NULL. */
const char* tfc_status_message(tfc_status_t status);

/* Releases |status|. NULL is accepted and ignored. */
void tfc_status_free(tfc_status_t status);

/* Returns the upper-case name of |code|, e.g. "DATA_LOSS"; "UNKNOWN" for other values. */
const char* tfc_status_code_string(tfc_status_code_t code);

/* Makes a status with |code| and a printf-style message. For implementers of runtime
 * modules rather than for applications. Returns NULL when |code| is TFC_OK. Never fails:
 * when memory runs out it returns a shared static TFC_OUT_OF_MEMORY status, which
 * tfc_status_free() knows not to release. */
tfc_status_t tfc_status_make(tfc_status_code_t code, const char* format, ...)
    TFC_PRINTF_FORMAT(2, 3);

/* The va_list form of tfc_status_make(). */
tfc_status_t tfc_status_make_v(tfc_status_code_t code, const char* format, va_list args)
    TFC_PRINTF_FORMAT(2, 0);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* TFC_RUNTIME_STATUS_H_ */
