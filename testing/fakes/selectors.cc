// Label and field selector matching (the subset kubectl users write).
#include <sstream>

#include "base/strings.h"
#include "testing/fakes/fake_kube_client.h"

namespace paratune::kube {

namespace {
// Splits on commas outside parentheses.
std::vector<std::string> SplitTerms(const std::string& selector) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : selector) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(Trim(cur, " "));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!Trim(cur, " ").empty()) out.push_back(Trim(cur, " "));
  return out;
}

const Json* Lookup(const Json& labels, const std::string& key) {
  if (!labels.is_object()) return nullptr;
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &*it;
}

bool MatchSetTerm(const Json& labels, const std::string& term, size_t pos, bool negate) {
  std::string key = Trim(term.substr(0, pos), " ");
  size_t open = term.find('(', pos), close = term.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return false;
  std::stringstream ss(term.substr(open + 1, close - open - 1));
  std::string v;
  bool found = false;
  const Json* have = Lookup(labels, key);
  while (std::getline(ss, v, ',')) {
    if (have && have->is_string() && have->get<std::string>() == Trim(v, " ")) found = true;
  }
  return negate ? !found : found;
}

bool MatchTerm(const Json& labels, const std::string& term) {
  if (term.empty()) return true;
  if (term[0] == '!') return Lookup(labels, Trim(term.substr(1), " ")) == nullptr;
  if (auto p = term.find(" notin "); p != std::string::npos) {
    return MatchSetTerm(labels, term, p, true);
  }
  if (auto p = term.find(" in "); p != std::string::npos) {
    return MatchSetTerm(labels, term, p, false);
  }
  bool negate = false;
  size_t op = term.find("!=");
  size_t vlen = 2;
  if (op != std::string::npos) {
    negate = true;
  } else if ((op = term.find("==")) == std::string::npos) {
    op = term.find('=');
    vlen = 1;
  }
  if (op == std::string::npos) return Lookup(labels, term) != nullptr;
  std::string key = Trim(term.substr(0, op), " "), value = Trim(term.substr(op + vlen), " ");
  const Json* have = Lookup(labels, key);
  bool eq = have && have->is_string() && have->get<std::string>() == value;
  return negate ? !eq : eq;
}

std::string PathString(const Json& obj, const std::string& path) {
  const Json* cur = &obj;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (!cur->is_object() || !cur->contains(part)) return "";
    cur = &(*cur)[part];
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null()) return "";
  return cur->dump();
}
}  // namespace

bool MatchesLabelSelector(const Json& labels, const std::string& selector) {
  for (const std::string& term : SplitTerms(selector)) {
    if (!MatchTerm(labels, term)) return false;
  }
  return true;
}

bool MatchesFieldSelector(const Json& obj, const std::string& selector) {
  for (const std::string& term : SplitTerms(selector)) {
    bool negate = false;
    size_t op = term.find("!="), vlen = 2;
    if (op != std::string::npos) {
      negate = true;
    } else if ((op = term.find("==")) == std::string::npos) {
      op = term.find('=');
      vlen = 1;
    }
    if (op == std::string::npos) return false;
    bool eq = PathString(obj, Trim(term.substr(0, op), " ")) == Trim(term.substr(op + vlen), " ");
    if (eq == negate) return false;
  }
  return true;
}

}  // namespace paratune::kube
