// OpenAI's completions and chat completions API: request bodies -> what to generate (every
// field checked, an unknown one refused by name), and the responses and stream events as
// OpenAI writes them (https://platform.openai.com/docs/api-reference/completions).
#ifndef TFC_RUN_SERVE_OPENAI_API_HPP_
#define TFC_RUN_SERVE_OPENAI_API_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "serve/chat_template.hpp"
#include "serve/engine.hpp"

namespace tfc::serve {

// An error response: {"error": {"message", "type", "param", "code"}} with an HTTP status.
struct ApiError {
  int status = 400;
  std::string message;
  std::string param;  // the offending field, or empty
  std::string type = "invalid_request_error";
};
std::string errorJson(const ApiError& error);

struct CompletionRequest {
  bool chat = false;
  std::string prompt;                        // text to encode (a chat: its rendered messages)
  std::optional<std::vector<int32_t>> ids;   // completions: a prompt given as token ids
  std::optional<int64_t> maxTokens;          // absent: completions 16, chat up to n_ctx
  double temperature = 1.0;                  // OpenAI's default
  double topP = 1.0;
  int32_t topK = 0;                          // not OpenAI's; as llama.cpp and vLLM take it
  bool ignoreEos = false;                    // not OpenAI's (vLLM's, llama.cpp's): run to
                                             // max_tokens past the end-of-text token
  std::optional<int64_t> seed;
  std::vector<std::string> stop;             // at most 4
  bool stream = false;
  bool includeUsage = false;                 // stream_options.include_usage
};

// Parses a /v1/completions (|chat| false) or /v1/chat/completions body. False with |*error|
// for malformed JSON, a field of the wrong type or out of range, an unknown field, or one
// tfc does not implement (n > 1, logprobs, penalties, tools, ...).
bool parseCompletionRequest(const std::string& body, bool chat, const ChatTemplate& chatTemplate,
                            CompletionRequest* out, ApiError* error);

// The identity of one response: "cmpl-N" / "chatcmpl-N", its creation time, the model.
struct ResponseId {
  std::string id;
  int64_t created = 0;
  std::string model;
};

// A whole (non-streamed) response.
std::string completionJson(const CompletionRequest& request, const ResponseId& id,
                           const std::string& text, const Outcome& outcome);
// One streamed event's JSON (without "data: "): a text delta (|finishReason| empty), or the
// last event with the finish reason; a chat's first event also carries the role.
std::string chunkJson(const CompletionRequest& request, const ResponseId& id,
                      const std::string& delta, const std::string& finishReason, bool first);
// The usage event of stream_options.include_usage (no choices).
std::string usageChunkJson(const CompletionRequest& request, const ResponseId& id,
                           const Outcome& outcome);

}  // namespace tfc::serve

#endif  // TFC_RUN_SERVE_OPENAI_API_HPP_
