#include "agents/collectors/log_lines.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "agents/collectors/metric_collector.h"

namespace paratune::collectors {

namespace {

// ESC '[' parameters final-byte (CSI), or ESC followed by one character.
std::string StripAnsi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\x1b') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;
    } else {
      ++i;
    }
  }
  return out;
}

bool ReadInt(std::string_view s, size_t* pos, int64_t* out) {
  size_t p = *pos;
  int64_t v = 0;
  while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p])) && p - *pos < 9) {
    v = v * 10 + (s[p] - '0');
    ++p;
  }
  if (p == *pos) return false;
  *pos = p;
  *out = v;
  return true;
}

// Length of a rank prefix at the start of `s` (0 when none); sets *rank.
size_t RankPrefix(std::string_view s, int64_t* rank) {
  size_t p = 0;
  int64_t r = -1;
  for (std::string_view word : {std::string_view("[rank"), std::string_view("[default")}) {
    if (s.substr(0, word.size()) == word) {
      p = word.size();
      if (ReadInt(s, &p, &r) && s.substr(p, 2) == "]:") {
        *rank = r;
        return p + 2;
      }
      return 0;
    }
  }
  if (s.substr(0, 3) == "[1,") {  // Open MPI: [jobid,rank]<stdout>:
    p = 3;
    if (ReadInt(s, &p, &r) && s.substr(p, 10) == "]<stdout>:") {
      *rank = r;
      return p + 10;
    }
    return 0;
  }
  // srun --label: "  3: " (right-aligned rank, colon, space).
  while (p < s.size() && s[p] == ' ') ++p;
  if (ReadInt(s, &p, &r) && s.substr(p, 2) == ": ") {
    *rank = r;
    return p + 2;
  }
  return 0;
}

}  // namespace

CleanLine Clean(std::string_view raw) {
  CleanLine out;
  std::string text = StripAnsi(raw);
  size_t n = RankPrefix(text, &out.rank);
  out.text = text.substr(n);
  return out;
}

std::vector<CleanLine> CleanLines(std::string_view log) {
  std::vector<CleanLine> out;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find_first_of("\r\n", start);
    if (end == std::string_view::npos) end = log.size();
    if (end > start) out.push_back(Clean(log.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

bool NumberAfter(std::string_view line, std::string_view label, double* out) {
  size_t pos = line.find(label);
  if (pos == std::string_view::npos) return false;
  pos += label.size();
  while (pos < line.size() &&
         (line[pos] == ' ' || line[pos] == ':' || line[pos] == '=' || line[pos] == '\t')) {
    ++pos;
  }
  std::string digits;
  while (pos < line.size() && digits.size() < 64) {
    char c = line[pos];
    bool numeric = (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' ||
                   c == 'E' || c == ',';
    if (!numeric) break;
    if (c != ',') digits.push_back(c);
    ++pos;
  }
  if (digits.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(digits.c_str(), &end);
  if (end == digits.c_str() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace paratune::collectors
