#include "serve/text_stream.hpp"

#include <algorithm>

namespace tfc::serve {

size_t utf8Boundary(std::string_view s, size_t n) {
  n = std::min(n, s.size());
  // The last lead byte among the last 4: if its character runs past n, cut before it.
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const unsigned char c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    const size_t length = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                        : (c & 0xF8) == 0xF0 ? 4 : 1;
    return length > back ? n - back : n;
  }
  return n;
}

TextStream::TextStream(std::vector<std::string> stops) {
  for (std::string& stop : stops) {
    if (stop.empty()) continue;
    longestStop_ = std::max(longestStop_, stop.size());
    stops_.push_back(std::move(stop));
  }
}

std::string TextStream::take(size_t n) {
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  sent_ += out;
  return out;
}

std::string TextStream::push(std::string_view bytes, bool* stopped) {
  *stopped = stopped_;
  if (stopped_) return {};
  pending_.append(bytes);
  // The earliest stop string in what is held back. Held back are at least the last
  // longestStop_ - 1 bytes, so a stop string completed by these bytes lies wholly in it.
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) first = std::min(first, pending_.find(stop));
  if (first != std::string::npos) {
    stopped_ = *stopped = true;
    std::string out = take(first);
    pending_.clear();
    return out;
  }
  const size_t hold = longestStop_ > 0 ? longestStop_ - 1 : 0;
  if (pending_.size() <= hold) return {};
  return take(utf8Boundary(pending_, pending_.size() - hold));
}

std::string TextStream::finish() {
  if (stopped_) return {};
  return take(pending_.size());
}

}  // namespace tfc::serve
