// Chat messages -> the prompt text of a chat model, in the format its training used.
//
// A model's tokenizer_config.json carries a Jinja chat_template; tfc does not run Jinja.
// As llama.cpp does, it recognises the template of each family tfc loads by its marker
// strings and renders that family's format itself:
//   chatml   <|im_start|>role\ncontent<|im_end|>\n ... <|im_start|>assistant\n   (Qwen2;
//            Qwen2's default system message when its template has one)
//   llama3   <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|> ...
//   llama2   [INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] assistant</s><s>[INST] ...
//   mistral  [INST] user [/INST] assistant</s>[INST] ... (a system message joins the first
//            user turn)
//   zephyr   <|role|>\ncontent</s>\n ... <|assistant|>\n
//   plain    "role: content\n" lines, then "assistant:" (no template: base models such
//            as GPT-2)
// The tokenizer's BOS token (LLaMA's <s>, <|begin_of_text|>) is added when the text is
// encoded, as for any prompt.
#ifndef TFC_RUN_SERVE_CHAT_TEMPLATE_HPP_
#define TFC_RUN_SERVE_CHAT_TEMPLATE_HPP_

#include <string>
#include <vector>

namespace tfc::serve {

struct ChatMessage {
  std::string role;  // system, user or assistant
  std::string content;
};

class ChatTemplate {
 public:
  enum class Family { kPlain, kChatml, kLlama3, kLlama2, kMistral, kZephyr };

  // The family of a Jinja chat_template (empty: plain).
  static ChatTemplate fromJinja(const std::string& jinja);
  // By name (plain, chatml, llama3, llama2, mistral, zephyr); false if unknown.
  static bool fromName(const std::string& name, ChatTemplate* out);

  Family family() const { return family_; }
  const char* name() const;
  // The prompt text: the messages, then the opening of the assistant's turn.
  std::string render(const std::vector<ChatMessage>& messages) const;

 private:
  Family family_ = Family::kPlain;
  std::string defaultSystem_;  // chatml: Qwen2's default system message
};

}  // namespace tfc::serve

#endif  // TFC_RUN_SERVE_CHAT_TEMPLATE_HPP_
