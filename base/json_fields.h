// Typed reads from a JSON object with errors that name the field. Used by every parser that
// turns user input into structs (campaigns, profiles, trial results). And the lenient getters
// every reader of wire JSON (API objects, reports, result files) uses. Never throws.
#ifndef PARATUNE_BASE_JSON_FIELDS_H_
#define PARATUNE_BASE_JSON_FIELDS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace paratune {

// A view of one JSON object at a dotted path ("spec.budget"). Absent keys leave outputs alone.
class JsonFields {
 public:
  JsonFields(const nlohmann::json& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  // Fails unless the value is an object (null counts as an empty object).
  Status CheckObject() const;
  // Fails on keys not in `known` (Kubernetes' strict field validation): catches typos.
  Status CheckKnownKeys(const std::vector<std::string>& known) const;

  bool Has(const std::string& key) const;
  const nlohmann::json& Get(const std::string& key) const;  // null json when absent
  std::string Path(const std::string& key) const { return path_ + "." + key; }

  Status ReadString(const std::string& key, std::string* out) const;
  Status ReadEnum(const std::string& key, const std::vector<std::string>& allowed,
                  std::string* out) const;
  Status ReadInt(const std::string& key, int64_t min, int64_t max, int64_t* out) const;
  Status ReadOptionalInt(const std::string& key, int64_t min, int64_t max,
                         std::optional<int64_t>* out) const;
  Status ReadDouble(const std::string& key, double min, double max, double* out) const;
  Status ReadBool(const std::string& key, bool* out) const;
  Status ReadStringList(const std::string& key, std::vector<std::string>* out) const;

 private:
  const nlohmann::json& obj_;
  std::string path_;
};

// A short, printable rendering of user input for error messages: at most `max` bytes (then
// "... (N bytes)"), invalid UTF-8 replaced; lists and objects are named by their type and size
// rather than dumped (a hostile value may be megabytes or thousands of levels deep).
std::string JsonExcerpt(const nlohmann::json& v, size_t max = 80);

// Lenient getters for JSON we did not write ourselves or read for display: a missing key, a
// value of another type or an `obj` that is no object (objects from the API server may carry
// `"status": null`, on which json::value() throws) give the fallback. Thread-safe.
//
// obj[key] of any type, or null.
const nlohmann::json& ValueField(const nlohmann::json& obj, const std::string& key);
// obj[key] when it is an object, else an empty object.
const nlohmann::json& ObjectField(const nlohmann::json& obj, const std::string& key);
// obj[key] when it is an array, else an empty array.
const nlohmann::json& ArrayField(const nlohmann::json& obj, const std::string& key);
// obj[key] when it is a string, else `fallback`.
std::string StringField(const nlohmann::json& obj, const std::string& key,
                        const std::string& fallback = "");
// obj[key] when it is a number, else `fallback`.
double NumberField(const nlohmann::json& obj, const std::string& key, double fallback = 0);
std::string TextExcerpt(std::string_view text, size_t max = 80);

}  // namespace paratune

#endif  // PARATUNE_BASE_JSON_FIELDS_H_
