// The serve command's pieces without a server: text deltas (whole UTF-8, stop strings),
// chat templates, and the OpenAI request parser (test/e2e/serve.test runs the server).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "serve/chat_template.hpp"
#include "serve/openai_api.hpp"
#include "serve/text_stream.hpp"

namespace tfc::serve {
namespace {

std::string pushAll(TextStream& stream, const std::vector<std::string>& pieces, bool* stopped) {
  std::string out;
  for (const std::string& piece : pieces) {
    out += stream.push(piece, stopped);
    if (*stopped) return out;
  }
  return out + stream.finish();
}

TEST(TextStream, SendsWholeCharactersOnly) {
  TextStream stream;
  bool stopped = false;
  // "é" is C3 A9, "€" E2 82 AC: tokens that end inside them hold the bytes back.
  EXPECT_EQ(stream.push("a\xC3", &stopped), "a");
  EXPECT_EQ(stream.push("\xA9\xE2\x82", &stopped), "\xC3\xA9");
  EXPECT_EQ(stream.push("\xAC!", &stopped), "\xE2\x82\xAC!");
  EXPECT_FALSE(stopped);
  EXPECT_EQ(stream.text(), "a\xC3\xA9\xE2\x82\xAC!");
  EXPECT_EQ(utf8Boundary("ab\xF0\x9F\x98", 5), 2u);
  EXPECT_EQ(utf8Boundary("ab\xF0\x9F\x98\x80", 6), 6u);
}

TEST(TextStream, EndsBeforeTheFirstStopString) {
  bool stopped = false;
  TextStream a({"END", "\n\n"});
  EXPECT_EQ(pushAll(a, {"Hello", " E", "N", "D and more"}, &stopped), "Hello ");
  EXPECT_TRUE(stopped);
  TextStream b({"END", "\n\n"});
  EXPECT_EQ(pushAll(b, {"one\n", "\ntwo END"}, &stopped), "one");
  EXPECT_TRUE(stopped);
  // A prefix of a stop string that does not complete is sent at the end.
  TextStream c({"END"});
  EXPECT_EQ(pushAll(c, {"the E", "N"}, &stopped), "the EN");
  EXPECT_FALSE(stopped);
}

TEST(ChatTemplate, RecognisesFamiliesAndRenders) {
  const std::vector<ChatMessage> messages = {{"system", "S"}, {"user", "U"}, {"assistant", "A"},
                                             {"user", "V"}};
  ChatTemplate chatml = ChatTemplate::fromJinja(
      "{% for m in messages %}<|im_start|>{{m.role}}...You are a helpful assistant.");
  EXPECT_STREQ(chatml.name(), "chatml");
  EXPECT_EQ(chatml.render(messages),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
            "<|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nV<|im_end|>\n"
            "<|im_start|>assistant\n");
  // Qwen2's default system message when none is given.
  EXPECT_EQ(chatml.render({{"user", "U"}}),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
  ChatTemplate llama3 = ChatTemplate::fromJinja("<|start_header_id|>");
  EXPECT_EQ(llama3.render({{"user", "U"}}),
            "<|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  ChatTemplate llama2 = ChatTemplate::fromJinja("[INST] <<SYS>>");
  EXPECT_EQ(llama2.render(messages), "[INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST] A</s><s>[INST] V [/INST]");
  ChatTemplate mistral = ChatTemplate::fromJinja("[INST]");
  EXPECT_EQ(mistral.render(messages), "[INST] S\n\nU [/INST] A</s><s>[INST] V [/INST]");
  EXPECT_STREQ(ChatTemplate::fromJinja("").name(), "plain");
  EXPECT_EQ(ChatTemplate::fromJinja("").render({{"user", "U"}}), "user: U\nassistant:");
  ChatTemplate named;
  EXPECT_TRUE(ChatTemplate::fromName("zephyr", &named));
  EXPECT_EQ(named.render({{"user", "U"}}), "<|user|>\nU</s>\n<|assistant|>\n");
  EXPECT_FALSE(ChatTemplate::fromName("jinja", &named));
}

TEST(OpenAiApi, ParsesAndRefusesByField) {
  ChatTemplate plain;
  CompletionRequest r;
  ApiError e;
  ASSERT_TRUE(parseCompletionRequest(
      R"({"model": "m", "prompt": "hi", "max_tokens": 5, "temperature": 0.5, "top_p": 0.9,
          "top_k": 3, "stop": ["a", "b"], "seed": -7, "stream": true,
          "stream_options": {"include_usage": true}, "ignore_eos": true, "n": 1,
          "logprobs": null, "presence_penalty": 0})",
      false, plain, &r, &e))
      << e.message;
  EXPECT_EQ(r.prompt, "hi");
  EXPECT_EQ(*r.maxTokens, 5);
  EXPECT_EQ(r.temperature, 0.5);
  EXPECT_EQ(r.topK, 3);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*r.seed, -7);
  EXPECT_TRUE(r.stream && r.includeUsage && r.ignoreEos);

  CompletionRequest ids;
  ASSERT_TRUE(parseCompletionRequest(R"({"prompt": [[1, 2, 3]]})", false, plain, &ids, &e));
  EXPECT_EQ(*ids.ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(ids.maxTokens.has_value());
  EXPECT_EQ(ids.temperature, 1.0);  // OpenAI's default

  CompletionRequest chat;
  ASSERT_TRUE(parseCompletionRequest(
      R"({"messages": [{"role": "developer", "content": "D"},
                       {"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]}],
          "max_completion_tokens": 4})",
      true, plain, &chat, &e))
      << e.message;
  EXPECT_EQ(chat.prompt, "system: D\nuser: xy\nassistant:");
  EXPECT_EQ(*chat.maxTokens, 4);

  struct Bad {
    const char* body;
    bool chat;
    const char* param;
  };
  for (const Bad& bad : {Bad{R"([1])", false, ""}, Bad{R"({"prompt": "x", "bogus": 1})", false, "bogus"},
                         Bad{R"({"prompt": "x", "max_tokens": 0})", false, "max_tokens"},
                         Bad{R"({"prompt": "x", "max_tokens": 2.5})", false, "max_tokens"},
                         Bad{R"({"prompt": "x", "top_p": 0})", false, "top_p"},
                         Bad{R"({"prompt": "x", "stop": ["a","b","c","d","e"]})", false, "stop"},
                         Bad{R"({"prompt": "x", "frequency_penalty": 0.5})", false, "frequency_penalty"},
                         Bad{R"({"prompt": "x", "echo": true})", false, "echo"},
                         Bad{R"({"prompt": [-1]})", false, "prompt"},
                         Bad{R"({"prompt": {"a": 1}})", false, "prompt"},
                         Bad{R"({"messages": [{"role": "tool", "content": "x"}]})", true, "messages[0].role"},
                         Bad{R"({"messages": [{"role": "user"}]})", true, "messages[0].content"},
                         Bad{R"({"messages": [{"role": "user", "content": "x"}], "tools": [{}]})", true, "tools"},
                         Bad{R"({"messages": [{"role": "user", "content": "x"}], "prompt": "y"})", true, "prompt"}}) {
    CompletionRequest out;
    ApiError error;
    EXPECT_FALSE(parseCompletionRequest(bad.body, bad.chat, plain, &out, &error)) << bad.body;
    EXPECT_EQ(error.param, bad.param) << bad.body << ": " << error.message;
    EXPECT_EQ(error.status, 400);
    EXPECT_FALSE(error.message.empty());
  }
}

TEST(OpenAiApi, ResponsesAndEvents) {
  CompletionRequest chat;
  chat.chat = true;
  ResponseId id{"chatcmpl-1", 5, "m"};
  Outcome outcome{"length", "", 3, 2};
  std::string whole = completionJson(chat, id, "hi", outcome);
  EXPECT_NE(whole.find(R"("message":{"content":"hi","role":"assistant"})"), std::string::npos) << whole;
  EXPECT_NE(whole.find(R"("usage":{"completion_tokens":2,"prompt_tokens":3,"total_tokens":5})"),
            std::string::npos) << whole;
  std::string first = chunkJson(chat, id, "", "", true);
  EXPECT_NE(first.find(R"("delta":{"content":"","role":"assistant"})"), std::string::npos) << first;
  std::string last = chunkJson(chat, id, "", "stop", false);
  EXPECT_NE(last.find(R"("delta":{})"), std::string::npos) << last;
  EXPECT_NE(last.find(R"("finish_reason":"stop")"), std::string::npos) << last;
  // Bytes that are not UTF-8 become U+FFFD instead of breaking the JSON.
  CompletionRequest text;
  std::string replaced = chunkJson(text, id, "a\xFF", "", false);
  EXPECT_NE(replaced.find("a\xEF\xBF\xBD"), std::string::npos) << replaced;
}

}  // namespace
}  // namespace tfc::serve
