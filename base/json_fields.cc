#include "base/json_fields.h"

#include <algorithm>
#include <cmath>

#include "base/utf8.h"

namespace paratune {

namespace {
const nlohmann::json& NullJson() {
  static const nlohmann::json kNull;
  return kNull;
}
}  // namespace

Status JsonFields::CheckObject() const {
  if (obj_.is_null() || obj_.is_object()) return Status::Ok();
  return Status::Invalid(path_ + ": must be an object, got " + std::string(obj_.type_name()));
}

Status JsonFields::CheckKnownKeys(const std::vector<std::string>& known) const {
  if (!obj_.is_object()) return Status::Ok();
  for (const auto& [k, v] : obj_.items()) {
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      std::string list;
      for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
      return Status::Invalid(Path(TextExcerpt(k, 64)) + ": unknown field (known: " + list + ")");
    }
  }
  return Status::Ok();
}

bool JsonFields::Has(const std::string& key) const {
  return obj_.is_object() && obj_.contains(key) && !obj_.at(key).is_null();
}

const nlohmann::json& JsonFields::Get(const std::string& key) const {
  return Has(key) ? obj_.at(key) : NullJson();
}

Status JsonFields::ReadString(const std::string& key, std::string* out) const {
  if (!Has(key)) return Status::Ok();
  const auto& v = obj_.at(key);
  if (!v.is_string()) {
    return Status::Invalid(Path(key) + ": must be a string, got " + JsonExcerpt(v));
  }
  *out = v.get<std::string>();
  if (out->size() > 65536) {
    return Status::Invalid(Path(key) + ": a string of " + std::to_string(out->size()) +
                           " bytes; the limit is 65536");
  }
  return Status::Ok();
}

Status JsonFields::ReadEnum(const std::string& key, const std::vector<std::string>& allowed,
                            std::string* out) const {
  std::string v = *out;
  PARATUNE_RETURN_IF_ERROR(ReadString(key, &v));
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : " | ") + a;
    return Status::Invalid(Path(key) + ": must be one of " + list + ", got \"" + TextExcerpt(v) +
                           "\"");
  }
  *out = v;
  return Status::Ok();
}

Status JsonFields::ReadInt(const std::string& key, int64_t min, int64_t max, int64_t* out) const {
  if (!Has(key)) return Status::Ok();
  const auto& v = obj_.at(key);
  int64_t n = 0;
  if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
             std::fabs(v.get<double>()) < 9e18) {
    n = static_cast<int64_t>(v.get<double>());
  } else {
    return Status::Invalid(Path(key) + ": must be an integer, got " + JsonExcerpt(v));
  }
  if (n < min || n > max) {
    return Status::Invalid(Path(key) + ": must be between " + std::to_string(min) + " and " +
                           std::to_string(max) + ", got " + std::to_string(n));
  }
  *out = n;
  return Status::Ok();
}

Status JsonFields::ReadOptionalInt(const std::string& key, int64_t min, int64_t max,
                                   std::optional<int64_t>* out) const {
  if (!Has(key)) return Status::Ok();
  int64_t n = 0;
  PARATUNE_RETURN_IF_ERROR(ReadInt(key, min, max, &n));
  *out = n;
  return Status::Ok();
}

Status JsonFields::ReadDouble(const std::string& key, double min, double max, double* out) const {
  if (!Has(key)) return Status::Ok();
  const auto& v = obj_.at(key);
  if (!v.is_number())
    return Status::Invalid(Path(key) + ": must be a number, got " + JsonExcerpt(v));
  double d = v.get<double>();
  if (!(d >= min && d <= max)) {
    return Status::Invalid(Path(key) + ": must be between " + std::to_string(min) + " and " +
                           std::to_string(max));
  }
  *out = d;
  return Status::Ok();
}

Status JsonFields::ReadBool(const std::string& key, bool* out) const {
  if (!Has(key)) return Status::Ok();
  const auto& v = obj_.at(key);
  if (!v.is_boolean()) return Status::Invalid(Path(key) + ": must be true or false");
  *out = v.get<bool>();
  return Status::Ok();
}

Status JsonFields::ReadStringList(const std::string& key, std::vector<std::string>* out) const {
  if (!Has(key)) return Status::Ok();
  const auto& v = obj_.at(key);
  if (!v.is_array()) return Status::Invalid(Path(key) + ": must be a list of strings");
  out->clear();
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      return Status::Invalid(Path(key) + "[" + std::to_string(i) + "]: must be a string");
    }
    out->push_back(v[i].get<std::string>());
  }
  return Status::Ok();
}

}  // namespace paratune

namespace paratune {

std::string TextExcerpt(std::string_view text, size_t max) {
  std::string out;
  size_t i = 0;
  // Whole, valid UTF-8 sequences only (the result goes into JSON); control characters become
  // '?', invalid bytes U+FFFD.
  while (i < text.size() && out.size() < max) {
    const size_t len = Utf8SequenceLength(text, i);
    const auto c = static_cast<unsigned char>(text[i]);
    if (len > 1 || (len == 1 && c >= 0x20 && c != 0x7F)) {
      out.append(text.substr(i, len));
    } else {
      out += len == 1 ? "?" : "\xEF\xBF\xBD";
    }
    i += len == 0 ? 1 : len;
  }
  if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string JsonExcerpt(const nlohmann::json& v, size_t max) {
  if (v.is_array()) return "a list of " + std::to_string(v.size());
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " fields";
  if (v.is_string() && v.get_ref<const std::string&>().size() > max) {
    return "\"" + TextExcerpt(v.get_ref<const std::string&>(), max) + "\"";
  }
  return TextExcerpt(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), max);
}

const nlohmann::json& ValueField(const nlohmann::json& obj, const std::string& key) {
  if (!obj.is_object()) return NullJson();
  auto it = obj.find(key);
  return it != obj.end() ? *it : NullJson();
}

const nlohmann::json& ObjectField(const nlohmann::json& obj, const std::string& key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json& v = ValueField(obj, key);
  return v.is_object() ? v : kEmpty;
}

const nlohmann::json& ArrayField(const nlohmann::json& obj, const std::string& key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json& v = ValueField(obj, key);
  return v.is_array() ? v : kEmpty;
}

std::string StringField(const nlohmann::json& obj, const std::string& key,
                        const std::string& fallback) {
  const nlohmann::json& v = ValueField(obj, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

double NumberField(const nlohmann::json& obj, const std::string& key, double fallback) {
  const nlohmann::json& v = ValueField(obj, key);
  return v.is_number() ? v.get<double>() : fallback;
}

}  // namespace paratune
