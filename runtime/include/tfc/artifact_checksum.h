/* The checksum trailer of a tfc artifact: shared by the compiler, which appends it to the
 * shared object it links, and the runtime, which checks it before dlopen(). Plain C, no
 * includes beyond <stdint.h> and <string.h>, like artifact_abi.h.
 *
 * Why: dlopen() trusts the file. A model.so with bytes overwritten (a bad copy, a disk
 * error, an editor) ends in an ld.so assertion or a SIGSEGV inside the loader or the
 * compiled code, which kills the process (and a Python interpreter with it). A checksum
 * recorded when tfc wrote the file turns that into an error that says what happened.
 *
 * Layout: the last TFC_ARTIFACT_TRAILER_SIZE bytes of the file are
 *   bytes  0..7   TFC_ARTIFACT_TRAILER_MAGIC ("TFCSUM01")
 *   bytes  8..15  the covered length: the bytes before the trailer (little-endian uint64)
 *   bytes 16..23  XXH64 (seed 0) of those bytes (little-endian uint64)
 * The ELF loader ignores bytes past the sections and segments, so the trailer changes
 * nothing about how the object loads.
 *
 * The hash is XXH64 (Yann Collet's xxHash, 64-bit; BSD-2-Clause algorithm), written out
 * here so that neither side needs a library: several GB/s, so a model of tens of MB costs
 * milliseconds. It detects accidental damage, not tampering (it is not a signature).
 */
#ifndef TFC_ARTIFACT_CHECKSUM_H_
#define TFC_ARTIFACT_CHECKSUM_H_

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TFC_ARTIFACT_TRAILER_MAGIC "TFCSUM01"
#define TFC_ARTIFACT_TRAILER_SIZE 24

/* The state of an XXH64 hash fed in whole 32-byte stripes (tfc_checksum_stripes) and
 * finished with the tail of fewer than 32 bytes (tfc_checksum_finish). */
typedef struct tfc_checksum_state_t {
  uint64_t lanes[4];
  uint64_t length; /* bytes fed so far */
} tfc_checksum_state_t;

#define TFC_XXH_P1 0x9E3779B185EBCA87ULL
#define TFC_XXH_P2 0xC2B2AE3D27D4EB4FULL
#define TFC_XXH_P3 0x165667B19E3779F9ULL
#define TFC_XXH_P4 0x85EBCA77C2B2AE63ULL
#define TFC_XXH_P5 0x27D4EB2F165667C5ULL

static inline uint64_t tfc_checksum_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Little-endian loads on every host: one load where the host is little-endian (a byte loop
 * there runs at a tenth of the speed). */
static inline uint64_t tfc_checksum_read64(const unsigned char* p) {
  uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(&v, p, 8);
#else
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
#endif
  return v;
}

static inline uint32_t tfc_checksum_read32(const unsigned char* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

static inline void tfc_checksum_write64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t tfc_checksum_round(uint64_t acc, uint64_t input) {
  acc += input * TFC_XXH_P2;
  acc = tfc_checksum_rotl(acc, 31);
  return acc * TFC_XXH_P1;
}

static inline uint64_t tfc_checksum_merge(uint64_t acc, uint64_t lane) {
  acc ^= tfc_checksum_round(0, lane);
  return acc * TFC_XXH_P1 + TFC_XXH_P4;
}

static inline void tfc_checksum_init(tfc_checksum_state_t* state) {
  state->lanes[0] = TFC_XXH_P1 + TFC_XXH_P2;
  state->lanes[1] = TFC_XXH_P2;
  state->lanes[2] = 0;
  state->lanes[3] = 0 - TFC_XXH_P1;
  state->length = 0;
}

/* Feeds |size| bytes, a multiple of 32. */
static inline void tfc_checksum_stripes(tfc_checksum_state_t* state, const void* data,
                                        uint64_t size) {
  const unsigned char* p = (const unsigned char*)data;
  uint64_t v0 = state->lanes[0], v1 = state->lanes[1], v2 = state->lanes[2],
           v3 = state->lanes[3];
  for (uint64_t i = 0; i + 32 <= size; i += 32) {
    v0 = tfc_checksum_round(v0, tfc_checksum_read64(p + i));
    v1 = tfc_checksum_round(v1, tfc_checksum_read64(p + i + 8));
    v2 = tfc_checksum_round(v2, tfc_checksum_read64(p + i + 16));
    v3 = tfc_checksum_round(v3, tfc_checksum_read64(p + i + 24));
  }
  state->lanes[0] = v0;
  state->lanes[1] = v1;
  state->lanes[2] = v2;
  state->lanes[3] = v3;
  state->length += size - size % 32;
}

/* Feeds the last |size| (< 32) bytes and returns the hash of everything fed. */
static inline uint64_t tfc_checksum_finish(const tfc_checksum_state_t* state, const void* tail,
                                           uint64_t size) {
  const unsigned char* p = (const unsigned char*)tail;
  const uint64_t total = state->length + size;
  uint64_t h;
  if (state->length >= 32) {
    h = tfc_checksum_rotl(state->lanes[0], 1) + tfc_checksum_rotl(state->lanes[1], 7) +
        tfc_checksum_rotl(state->lanes[2], 12) + tfc_checksum_rotl(state->lanes[3], 18);
    for (int i = 0; i < 4; ++i) h = tfc_checksum_merge(h, state->lanes[i]);
  } else {
    h = TFC_XXH_P5; /* seed 0 */
  }
  h += total;
  uint64_t i = 0;
  for (; i + 8 <= size; i += 8) {
    h ^= tfc_checksum_round(0, tfc_checksum_read64(p + i));
    h = tfc_checksum_rotl(h, 27) * TFC_XXH_P1 + TFC_XXH_P4;
  }
  if (i + 4 <= size) {
    h ^= (uint64_t)tfc_checksum_read32(p + i) * TFC_XXH_P1;
    h = tfc_checksum_rotl(h, 23) * TFC_XXH_P2 + TFC_XXH_P3;
    i += 4;
  }
  for (; i < size; ++i) {
    h ^= (uint64_t)p[i] * TFC_XXH_P5;
    h = tfc_checksum_rotl(h, 11) * TFC_XXH_P1;
  }
  h ^= h >> 33;
  h *= TFC_XXH_P2;
  h ^= h >> 29;
  h *= TFC_XXH_P3;
  h ^= h >> 32;
  return h;
}

/* XXH64 (seed 0) of |size| bytes at |data|. */
static inline uint64_t tfc_checksum64(const void* data, uint64_t size) {
  tfc_checksum_state_t state;
  tfc_checksum_init(&state);
  uint64_t whole = size - size % 32;
  tfc_checksum_stripes(&state, data, whole);
  return tfc_checksum_finish(&state, (const unsigned char*)data + whole, size - whole);
}

/* Writes the trailer for |covered| bytes whose hash is |hash| into |out|. */
static inline void tfc_checksum_trailer(unsigned char out[TFC_ARTIFACT_TRAILER_SIZE],
                                        uint64_t covered, uint64_t hash) {
  memcpy(out, TFC_ARTIFACT_TRAILER_MAGIC, 8);
  tfc_checksum_write64(out + 8, covered);
  tfc_checksum_write64(out + 16, hash);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TFC_ARTIFACT_CHECKSUM_H_ */
