// tfc-run's formatted output: fmt's format strings, printf's error handling.
//
// fmt::print throws std::system_error when a write fails; printf sets the stream's error
// flag and carries on. tfc-run wants the latter: a closed or full standard output is
// reported once, at exit, by main() (which checks ferror(stdout)), and a standard error that
// cannot be written must not stop a training run half-way. So these format with fmt and
// write with fwrite, ignoring its result as printf's callers did.
//
// tfc-run is compiled as C++20, so fmt checks every literal format string against its
// arguments at compile time.
#ifndef TFC_TOOLS_TFC_RUN_PRINT_HPP_
#define TFC_TOOLS_TFC_RUN_PRINT_HPP_

#include <cstdio>
#include <iterator>

#include <fmt/format.h>

namespace tfc::run {

inline void vprint(std::FILE* file, fmt::string_view format, fmt::format_args args) {
  fmt::memory_buffer buffer;
  fmt::vformat_to(std::back_inserter(buffer), format, args);
  std::fwrite(buffer.data(), 1, buffer.size(), file);
}

// Formats to |file| (stdout or stderr), as fmt::print(file, format, args...) does.
template <typename... T>
void print(std::FILE* file, fmt::format_string<T...> format, T&&... args) {
  run::vprint(file, format, fmt::make_format_args(args...));  // qualified: not fmt::vprint by ADL
}

// Formats to standard output.
template <typename... T>
void print(fmt::format_string<T...> format, T&&... args) {
  run::vprint(stdout, format, fmt::make_format_args(args...));
}

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_PRINT_HPP_
