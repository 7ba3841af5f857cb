#include "base/strings.h"

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

std::string Fixed(double v, int digits) { return Printf("%.*f", digits, v); }
std::string SignedFixed(double v, int digits) { return Printf("%+.*f", digits, v); }
std::string Significant(double v, int digits) { return Printf("%.*g", digits, v); }

}  // namespace paratune
