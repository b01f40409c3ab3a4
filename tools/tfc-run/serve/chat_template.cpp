#include "serve/chat_template.hpp"

namespace tfc::serve {
namespace {

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace

ChatTemplate ChatTemplate::fromJinja(const std::string& jinja) {
  ChatTemplate t;
  if (has(jinja, "<|im_start|>")) {
    t.family_ = Family::kChatml;
    if (has(jinja, "You are a helpful assistant.")) t.defaultSystem_ = "You are a helpful assistant.";
  } else if (has(jinja, "<|start_header_id|>")) {
    t.family_ = Family::kLlama3;
  } else if (has(jinja, "<<SYS>>")) {
    t.family_ = Family::kLlama2;
  } else if (has(jinja, "[INST]")) {
    t.family_ = Family::kMistral;
  } else if (has(jinja, "<|user|>") && has(jinja, "<|assistant|>")) {
    t.family_ = Family::kZephyr;
  }
  return t;
}

bool ChatTemplate::fromName(const std::string& name, ChatTemplate* out) {
  const std::pair<const char*, Family> names[] = {
      {"plain", Family::kPlain},   {"chatml", Family::kChatml},   {"llama3", Family::kLlama3},
      {"llama2", Family::kLlama2}, {"mistral", Family::kMistral}, {"zephyr", Family::kZephyr}};
  for (const auto& [text, family] : names) {
    if (name == text) {
      *out = ChatTemplate();
      out->family_ = family;
      return true;
    }
  }
  return false;
}

const char* ChatTemplate::name() const {
  switch (family_) {
    case Family::kPlain: return "plain";
    case Family::kChatml: return "chatml";
    case Family::kLlama3: return "llama3";
    case Family::kLlama2: return "llama2";
    case Family::kMistral: return "mistral";
    case Family::kZephyr: return "zephyr";
  }
  return "?";
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages) const {
  std::string out;
  switch (family_) {
    case Family::kChatml:
      if (!defaultSystem_.empty() && (messages.empty() || messages[0].role != "system")) {
        out += "<|im_start|>system\n" + defaultSystem_ + "<|im_end|>\n";
      }
      for (const ChatMessage& m : messages) {
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      }
      return out + "<|im_start|>assistant\n";
    case Family::kLlama3:
      for (const ChatMessage& m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
      }
      return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";
    case Family::kLlama2:
    case Family::kMistral: {
      // System text goes into the first user turn; each assistant turn closes with </s>
      // and the next user turn opens a new <s> (the first <s> is the tokenizer's BOS).
      std::string system;
      bool first = true;
      for (const ChatMessage& m : messages) {
        if (m.role == "system") {
          system += (system.empty() ? "" : "\n") + m.content;
        } else if (m.role == "user") {
          std::string user = m.content;
          if (!system.empty()) {
            user = family_ == Family::kLlama2 ? "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + user
                                              : system + "\n\n" + user;
            system.clear();
          }
          out += (first ? "" : "<s>") + std::string("[INST] ") + user + " [/INST]";
          first = false;
        } else {
          out += " " + m.content + "</s>";
        }
      }
      return out;
    }
    case Family::kZephyr:
      for (const ChatMessage& m : messages) out += "<|" + m.role + "|>\n" + m.content + "</s>\n";
      return out + "<|assistant|>\n";
    case Family::kPlain:
      break;
  }
  for (const ChatMessage& m : messages) out += m.role + ": " + m.content + "\n";
  return out + "assistant:";
}

}  // namespace tfc::serve
