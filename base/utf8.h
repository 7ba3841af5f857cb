// Cutting and cleaning text that ends up in JSON (Kubernetes status, CLI output, the message
// pool). nlohmann::json throws type_error.316 when it dumps invalid UTF-8, and a byte-offset cut
// of valid text can split a multi-byte sequence; every excerpt of log or evidence text goes
// through these helpers. All functions are pure, never throw, and run in linear time.
#ifndef PARATUNE_BASE_UTF8_H_
#define PARATUNE_BASE_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace paratune {

// The length of the valid UTF-8 sequence starting at text[i] (shortest form, no surrogates,
// <= U+10FFFF); 0 when there is none, or i is past the end.
size_t Utf8SequenceLength(std::string_view text, size_t i);

// True when `text` is well-formed UTF-8: what JSON, and so the API server, accepts.
bool IsValidUtf8(std::string_view text);

// The longest prefix of `text` of at most `max_bytes` bytes that does not end inside a
// multi-byte sequence (it backs off at most 3 bytes). A view into `text`.
std::string_view Utf8Prefix(std::string_view text, size_t max_bytes);

// The longest suffix of `text` of at most `max_bytes` bytes that does not begin inside a
// multi-byte sequence (it drops at most 3 leading continuation bytes). A view into `text`.
std::string_view Utf8Suffix(std::string_view text, size_t max_bytes);

// `text` with every byte that does not start a valid, shortest-form UTF-8 sequence (no
// surrogates, <= U+10FFFF) replaced by U+FFFD. The result is always valid UTF-8.
std::string Utf8Sanitize(std::string_view text);

// Valid UTF-8 of at most `max_bytes` bytes: the head (or tail) of `text`, sanitized. When the
// text was cut, `Utf8Head` appends `ellipsis` (counted within max_bytes when it fits).
std::string Utf8Head(std::string_view text, size_t max_bytes, std::string_view ellipsis = "");
std::string Utf8Tail(std::string_view text, size_t max_bytes);

}  // namespace paratune

#endif  // PARATUNE_BASE_UTF8_H_
