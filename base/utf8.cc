#include "base/utf8.h"

#include <cstdint>

namespace paratune {

namespace {

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace

size_t Utf8SequenceLength(std::string_view text, size_t i) {
  if (i >= text.size()) return 0;
  const auto c = static_cast<unsigned char>(text[i]);
  const size_t len = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xE  ? 3
                     : (c >> 3) == 0x1E ? 4
                                        : 0;
  if (len == 0 || i + len > text.size()) return 0;
  uint32_t cp = len == 1 ? c : (c & (0x7Fu >> len));
  for (size_t k = 1; k < len; ++k) {
    if (!IsContinuation(text[i + k])) return 0;
    cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  }
  constexpr uint32_t kMinOfLength[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinOfLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string_view Utf8Prefix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  // text[end] is the first byte left out: while it continues a sequence, the cut splits one.
  for (int back = 0; back < 3 && end > 0 && IsContinuation(text[end]); ++back) --end;
  if (IsContinuation(text[end])) end = max_bytes;  // not a sequence anyway: invalid bytes
  return text.substr(0, end);
}

std::string_view Utf8Suffix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t begin = text.size() - max_bytes;
  for (int skip = 0; skip < 3 && begin < text.size() && IsContinuation(text[begin]); ++skip) {
    ++begin;
  }
  return text.substr(begin);
}

std::string Utf8Sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out.append(kReplacement);
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string Utf8Head(std::string_view text, size_t max_bytes, std::string_view ellipsis) {
  std::string clean = Utf8Sanitize(Utf8Prefix(text, max_bytes));
  const bool cut = text.size() > max_bytes || clean.size() > max_bytes;
  if (!cut) return clean;
  const size_t room = max_bytes > ellipsis.size() ? max_bytes - ellipsis.size() : 0;
  std::string out(Utf8Prefix(clean, room));
  if (ellipsis.size() <= max_bytes) out.append(Utf8Sanitize(ellipsis));
  return out;
}

std::string Utf8Tail(std::string_view text, size_t max_bytes) {
  std::string clean = Utf8Sanitize(Utf8Suffix(text, max_bytes));
  if (clean.size() <= max_bytes) return clean;
  return std::string(Utf8Suffix(clean, max_bytes));
}

}  // namespace paratune
