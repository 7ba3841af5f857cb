// libFuzzer target: cutting and cleaning arbitrary bytes (base/utf8.h), the helpers every
// log/evidence excerpt goes through before it reaches JSON. Invariants: the result of Utf8Head,
// Utf8Tail and Utf8Sanitize dumps as strict JSON (no type_error.316), and a cut never exceeds its
// byte budget.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t budget = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string head = paratune::Utf8Head(text, budget, "...");
  const std::string tail = paratune::Utf8Tail(text, budget);
  if (head.size() > budget || tail.size() > budget) __builtin_trap();
  if (paratune::Utf8Prefix(text, budget).size() > budget) __builtin_trap();
  // Strict dump: throws on invalid UTF-8, which libFuzzer reports as a crash.
  (void)nlohmann::json{{"h", head}, {"t", tail}, {"s", paratune::Utf8Sanitize(text)}}.dump();
  return 0;
}
