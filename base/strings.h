// Small text helpers every layer needs: trimming, ASCII lower-casing and number formatting for
// messages, reports and metrics. Pure functions; numbers always use the C locale's '.'.
#ifndef PARATUNE_BASE_STRINGS_H_
#define PARATUNE_BASE_STRINGS_H_

#include <string>
#include <string_view>
#include <vector>

namespace paratune {

inline constexpr std::string_view kWhitespace = " \t\n\r\f\v";

// `s` without the leading and trailing characters found in `chars`.
std::string Trim(std::string_view s, std::string_view chars = kWhitespace);

// `s` with ASCII letters lower-cased; other bytes (UTF-8 included) unchanged.
std::string Lower(std::string_view s);

// The items of a `sep`-separated list, each trimmed of spaces and tabs; empty items dropped:
// SplitList(" a, ,b ,") == {"a", "b"}.
std::vector<std::string> SplitList(std::string_view text, char sep = ',');
// `parts` with `sep` between them.
std::string Join(const std::vector<std::string>& parts, std::string_view sep);

// `v` with `digits` digits after the point ("%.*f"): Fixed(2.345, 1) == "2.3".
std::string Fixed(double v, int digits);
// The same with a sign always shown ("%+.*f"): SignedFixed(2.3, 1) == "+2.3".
std::string SignedFixed(double v, int digits);
// `v` to `digits` significant digits, the shorter of fixed and exponent form ("%.*g").
std::string Significant(double v, int digits);
// A fraction as a percentage with `digits` decimals: Percent(0.1234, 1) == "12.3%".
std::string Percent(double fraction, int digits);
// The same with a sign always shown: SignedPercent(0.05, 1) == "+5.0%".
std::string SignedPercent(double fraction, int digits);

// `v` rounded half away from zero to `digits` (0..9) decimals, for numbers written to JSON:
// RoundTo(0.123456, 4) == 0.1235 (std::round(v * 1e4) / 1e4).
double RoundTo(double v, int digits);

// The last `max_bytes` bytes of `s` (all of it when shorter).
std::string Tail(std::string_view s, size_t max_bytes);
// The same, starting after the first newline in those bytes when there is one, so no line is
// cut at its start (the last whole lines of a log that fit).
std::string LastLinesWithin(std::string_view s, size_t max_bytes);

}  // namespace paratune

#endif  // PARATUNE_BASE_STRINGS_H_
