#include "base/strings.h"

#include <cmath>
#include <cstdio>

namespace paratune {

namespace {

std::string Printf(const char* fmt, int digits, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, digits, v);
  return buf;
}

}  // namespace

std::string Trim(std::string_view s, std::string_view chars) {
  const size_t b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(chars);
  return std::string(s.substr(b, e - b + 1));
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::vector<std::string> SplitList(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    std::string item = Trim(text.substr(start, end - start), " \t");
    if (!item.empty()) out.push_back(std::move(item));
    start = end + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.append(sep);
    out += parts[i];
  }
  return out;
}

std::string Fixed(double v, int digits) { return Printf("%.*f", digits, v); }
std::string SignedFixed(double v, int digits) { return Printf("%+.*f", digits, v); }
std::string Significant(double v, int digits) { return Printf("%.*g", digits, v); }
std::string Percent(double fraction, int digits) { return Fixed(fraction * 100, digits) + "%"; }
std::string SignedPercent(double fraction, int digits) {
  return SignedFixed(fraction * 100, digits) + "%";
}

double RoundTo(double v, int digits) {
  // Exact powers of ten, so the result is the same as with a literal 1e4.
  constexpr double kScale[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  const double scale = kScale[digits < 0 ? 0 : digits > 9 ? 9 : digits];
  return std::round(v * scale) / scale;
}

std::string Tail(std::string_view s, size_t max_bytes) {
  return std::string(s.size() <= max_bytes ? s : s.substr(s.size() - max_bytes));
}

std::string LastLinesWithin(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  const size_t from = s.find('\n', s.size() - max_bytes);
  return std::string(from == std::string_view::npos ? s.substr(s.size() - max_bytes)
                                                    : s.substr(from + 1));
}

}  // namespace paratune
