/* tfc-generate-example MODEL.so [TOKENIZER]: the C API's generator. Opens a compiled
 * decoder-only model, draws its parameters from their initializers (a real program loads
 * trained weights with tfc_params_load_safetensors), and generates up to 12 tokens after
 * the prompt "1 2 3" (fewer when the model's context ends first), streaming each to stdout
 * as it arrives. With TOKENIZER ("bytes" or a GPT-2
 * BPE folder) the prompt is text and the tokens' bytes are printed as well. */
#include <stdio.h>
#include <string.h>

#include "tfc/runtime/runtime.h"

static bool print_token(void* user_data, int32_t token, const char* bytes, size_t num_bytes) {
  (void)user_data;
  printf("token %d", token);
  if (bytes != NULL) printf(" %.*s", (int)num_bytes, bytes);
  printf("\n");
  return true; /* false would stop generation here */
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s MODEL.so [TOKENIZER]\n", argv[0]);
    return 2;
  }
  tfc_loaded_artifact_t* artifact = NULL;
  tfc_params_t* params = NULL;
  tfc_context_t* context = NULL;
  tfc_generator_t* generator = NULL;
  tfc_status_t status = tfc_artifact_open(argv[1], NULL, &artifact);
  if (!status) status = tfc_params_create(artifact, NULL, &params);
  if (!status) status = tfc_params_init(params, 7);
  if (!status) status = tfc_context_create(artifact, params, NULL, &context);
  tfc_generator_options_t generator_options;
  tfc_generator_options_initialize(&generator_options);
  generator_options.tokenizer = argc == 3 ? argv[2] : NULL;
  if (!status) status = tfc_generator_create(context, &generator_options, &generator);

  tfc_generate_options_t options;
  tfc_generate_options_initialize(&options);
  options.max_new_tokens = 12;
  options.temperature = 0.8f;
  options.top_k = 40;
  options.seed = 1;
  tfc_generate_stats_t stats;
  if (!status && argc == 3) {
    const char* prompt = "123";
    status = tfc_generator_generate_text(generator, prompt, strlen(prompt), &options,
                                         print_token, NULL, &stats);
  } else if (!status) {
    const int32_t prompt[] = {1, 2, 3};
    status = tfc_generator_generate(generator, prompt, 3, &options, print_token, NULL, &stats);
  }
  if (!status) {
    static const char* const reasons[] = {"max_new_tokens", "context limit", "end of text",
                                          "stop token", "callback"};
    printf("generated %lld tokens (stopped: %s), decode %.0f tokens/s\n",
           (long long)stats.generated_tokens, reasons[stats.stop_reason],
           stats.decode_tokens_per_second);
  }
  int exit_code = 0;
  if (status) {
    fprintf(stderr, "error: %s\n", tfc_status_message(status));
    tfc_status_free(status);
    exit_code = 1;
  }
  tfc_generator_destroy(generator);
  tfc_context_release(context);
  tfc_params_release(params);
  tfc_artifact_release(artifact);
  return exit_code;
}
