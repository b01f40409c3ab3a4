/* Appends the checksum trailer that tfc writes after linking (tfc/artifact_checksum.h) to
 * the shared objects named on the command line, so that the hand-written fake artifacts
 * load as compiled ones do. A build step (runtime/CMakeLists.txt), not a user tool. */
#include <stdio.h>
#include <stdlib.h>

#include "tfc/artifact_checksum.h"

static int seal(const char* path) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    perror(path);
    return 1;
  }
  size_t capacity = 1 << 16, size = 0;
  unsigned char* bytes = malloc(capacity);
  size_t got;
  while (bytes != NULL && (got = fread(bytes + size, 1, capacity - size, file)) > 0) {
    size += got;
    if (size == capacity) {
      capacity *= 2;
      unsigned char* grown = realloc(bytes, capacity);
      if (grown == NULL) free(bytes);
      bytes = grown;
    }
  }
  int failed = bytes == NULL || ferror(file);
  fclose(file);
  if (failed) {
    fprintf(stderr, "%s: cannot read it\n", path);
    free(bytes);
    return 1;
  }
  unsigned char trailer[TFC_ARTIFACT_TRAILER_SIZE];
  tfc_checksum_trailer(trailer, size, tfc_checksum64(bytes, size));
  free(bytes);
  file = fopen(path, "ab");
  if (file == NULL || fwrite(trailer, 1, sizeof(trailer), file) != sizeof(trailer) ||
      fclose(file) != 0) {
    fprintf(stderr, "%s: cannot append the checksum\n", path);
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  int status = 0;
  for (int i = 1; i < argc; ++i) status |= seal(argv[i]);
  return status;
}
