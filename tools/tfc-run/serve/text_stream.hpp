// Generated tokens' bytes -> text deltas a client can be sent: whole UTF-8 characters only
// (a token may end inside one), and never any part of a stop string (OpenAI's `stop`: the
// text ends before the first one, which is not sent).
#ifndef TFC_RUN_SERVE_TEXT_STREAM_HPP_
#define TFC_RUN_SERVE_TEXT_STREAM_HPP_

#include <string>
#include <string_view>
#include <vector>

namespace tfc::serve {

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stops = {});

  // Adds a token's bytes and returns the text that is now safe to send (maybe empty). When
  // a stop string has appeared, returns the text before it, sets |*stopped|, and the stream
  // takes nothing more.
  std::string push(std::string_view bytes, bool* stopped);
  // The held-back rest at the end of generation (an incomplete character included: JSON
  // encoding replaces it).
  std::string finish();
  // Everything returned so far.
  const std::string& text() const { return sent_; }

 private:
  std::string take(size_t n);

  std::vector<std::string> stops_;
  size_t longestStop_ = 0;
  std::string pending_, sent_;
  bool stopped_ = false;
};

// The largest n' <= n such that s[0, n') does not end inside a UTF-8 character.
size_t utf8Boundary(std::string_view s, size_t n);

}  // namespace tfc::serve

#endif  // TFC_RUN_SERVE_TEXT_STREAM_HPP_
