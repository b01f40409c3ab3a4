/* A shared object that is not a tfc artifact: it exports no tfc_artifact_v* symbol. */
__attribute__((visibility("default"))) int plain_library_add(int a, int b) { return a + b; }
