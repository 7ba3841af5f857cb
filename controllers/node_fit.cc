#include "controllers/node_fit.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "base/json_fields.h"
#include "base/strings.h"

namespace paratune::controllers {

using kube::Json;

namespace {

// Taints that come and go without anyone changing the node pool: the node lifecycle's
// condition taints (not-ready, unreachable, memory-pressure, unschedulable...), the cluster
// autoscaler's scale-down marks and the cloud provider's "not initialized yet".
bool PassingTaint(const std::string& key) {
  return key.rfind("node.kubernetes.io/", 0) == 0 || key == "ToBeDeletedByClusterAutoscaler" ||
         key == "DeletionCandidateOfClusterAutoscaler" ||
         key == "node.cloudprovider.kubernetes.io/uninitialized";
}

bool Tolerates(const Json& tolerations, const NodeTaint& t) {
  for (const auto& tol : tolerations) {
    const std::string effect = StringField(tol, "effect");
    if (!effect.empty() && effect != t.effect) continue;
    const std::string key = StringField(tol, "key");
    const std::string op = StringField(tol, "operator");
    if (op == "Exists") {
      if (key.empty() || key == t.key) return true;
    } else if (key == t.key && StringField(tol, "value") == t.value) {
      return true;
    }
  }
  return false;
}

// One matchExpressions / matchFields requirement against a label (or field) value.
bool Satisfies(const Json& req, const std::optional<std::string>& value) {
  const std::string op = StringField(req, "operator");
  std::vector<std::string> values;
  for (const auto& v : ArrayField(req, "values")) {
    if (v.is_string()) values.push_back(v.get<std::string>());
  }
  const bool listed = value && std::find(values.begin(), values.end(), *value) != values.end();
  if (op == "In") return listed;
  if (op == "NotIn") return !listed;
  if (op == "Exists") return value.has_value();
  if (op == "DoesNotExist") return !value.has_value();
  if ((op == "Gt" || op == "Lt") && value && values.size() == 1) {
    char* end = nullptr;
    const long long have = std::strtoll(value->c_str(), &end, 10);
    if (end == value->c_str() || *end != '\0') return false;
    const long long want = std::strtoll(values[0].c_str(), &end, 10);
    if (end == values[0].c_str() || *end != '\0') return false;
    return op == "Gt" ? have > want : have < want;
  }
  return false;
}

// The trial's own avoidance of suspect nodes (job_renderer: kubernetes.io/hostname NotIn), and
// any other exclusion of nodes by name: judged as passing (the node may be cleared).
bool ExcludesByName(const Json& req, bool field) {
  const std::string key = StringField(req, "key");
  return StringField(req, "operator") == "NotIn" &&
         (field ? key == "metadata.name" : key == "kubernetes.io/hostname");
}

bool TermMatches(const Json& term, const NodeFacts& node) {
  const Json& exprs = ArrayField(term, "matchExpressions");
  const Json& fields = ArrayField(term, "matchFields");
  if (exprs.empty() && fields.empty()) return false;  // an empty term matches no node
  for (const auto& req : exprs) {
    if (ExcludesByName(req, false)) continue;
    auto it = node.labels.find(StringField(req, "key"));
    if (!Satisfies(
            req, it == node.labels.end() ? std::nullopt : std::optional<std::string>(it->second))) {
      return false;
    }
  }
  for (const auto& req : fields) {
    if (ExcludesByName(req, true)) continue;
    if (StringField(req, "key") != "metadata.name" || !Satisfies(req, node.name)) return false;
  }
  return true;
}

// What the pod requests: per resource the sum over its containers (a request, else the limit,
// as the API server defaults it), at least the largest of any init container.
std::map<std::string, double> Requests(const Json& spec) {
  const auto of = [](const Json& container) {
    std::map<std::string, double> out;
    const Json& resources = ObjectField(container, "resources");
    for (const char* kind : {"limits", "requests"}) {  // requests override limits
      for (const auto& [name, value] : ObjectField(resources, kind).items()) {
        std::optional<double> q =
            value.is_string()
                ? ParseQuantity(value.get<std::string>())
                : (value.is_number() ? std::optional<double>(value.get<double>()) : std::nullopt);
        if (q) out[name] = *q;
      }
    }
    return out;
  };
  std::map<std::string, double> total;
  for (const auto& c : ArrayField(spec, "containers")) {
    for (const auto& [name, q] : of(c)) total[name] += q;
  }
  for (const auto& c : ArrayField(spec, "initContainers")) {
    for (const auto& [name, q] : of(c)) total[name] = std::max(total[name], q);
  }
  for (auto it = total.begin(); it != total.end();) {
    it = it->second > 0 ? std::next(it) : total.erase(it);
  }
  return total;
}

std::string WholeOrSignificant(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return Significant(v, 3);
}

// Memory-like quantities read better in GiB.
std::string Amount(const std::string& resource, double v) {
  if (resource == "memory" || resource == "ephemeral-storage" ||
      resource.rfind("hugepages-", 0) == 0) {
    return Significant(v / (1024.0 * 1024 * 1024), 4) + "Gi";
  }
  return WholeOrSignificant(v);
}

// What of a pod the nodes are judged against.
struct PodShape {
  const Json& selector;
  const Json& tolerations;
  const Json& required;  // requiredDuringSchedulingIgnoredDuringExecution ({} when none)
  std::map<std::string, double> wants;
};

double Allocatable(const NodeFacts& node, const std::string& resource) {
  auto it = node.allocatable.find(resource);
  return it == node.allocatable.end() ? 0 : it->second;
}

// WhyNot's answer for a node too small: kTooSmall + the resource's name.
constexpr std::string_view kTooSmall = "resource:";

// The resource a WhyNot answer says the node has too little of ("" for any other answer).
std::string TooSmallIn(const std::string& why) {
  return why.rfind(kTooSmall, 0) == 0 ? why.substr(kTooSmall.size()) : "";
}

// Why `node` could never run the pod, checked in the scheduler's filter order (labels,
// affinity, taints, size); "" when it could.
std::string WhyNot(const NodeFacts& node, const PodShape& pod) {
  for (const auto& [k, v] : pod.selector.items()) {
    auto it = node.labels.find(k);
    if (!v.is_string() || it == node.labels.end() || it->second != v.get<std::string>()) {
      return "lack label " + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  if (pod.required.contains("nodeSelectorTerms")) {
    const Json& terms = ArrayField(pod.required, "nodeSelectorTerms");
    if (std::none_of(terms.begin(), terms.end(),
                     [&](const Json& t) { return TermMatches(t, node); })) {
      return "do not match the pod's required node affinity";
    }
  }
  for (const NodeTaint& t : node.taints) {
    if (!Tolerates(pod.tolerations, t)) {
      return "have taint " + t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + t.effect +
             " the pod does not tolerate";
    }
  }
  for (const auto& [resource, want] : pod.wants) {
    if (Allocatable(node, resource) < want) return std::string(kTooSmall) + resource;
  }
  return "";
}

}  // namespace

std::optional<double> ParseQuantity(const std::string& text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  size_t i = 0;
  if (text[i] == '+' || text[i] == '-') ++i;
  const size_t digits_from = i;
  bool digit = false;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    digit |= text[i] != '.';
    ++i;
  }
  if (!digit) return std::nullopt;
  char* end = nullptr;
  const std::string number = text.substr(0, i);
  const double base = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || i == digits_from) return std::nullopt;
  const std::string suffix = text.substr(i);
  // A decimal exponent ("1e3", "2E-2"); a bare "E" is exa.
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    const std::string exp = suffix.substr(1);
    const size_t sign = exp[0] == '+' || exp[0] == '-' ? 1 : 0;
    if (exp.size() == sign || exp.find_first_not_of("0123456789", sign) != std::string::npos ||
        exp.size() > 6) {
      return std::nullopt;
    }
    return base * std::pow(10.0, std::atoi(exp.c_str()));
  }
  static const std::map<std::string, double> kSuffix = {{"", 1},
                                                        {"n", 1e-9},
                                                        {"u", 1e-6},
                                                        {"m", 1e-3},
                                                        {"k", 1e3},
                                                        {"M", 1e6},
                                                        {"G", 1e9},
                                                        {"T", 1e12},
                                                        {"P", 1e15},
                                                        {"E", 1e18},
                                                        {"Ki", 1024.0},
                                                        {"Mi", 1048576.0},
                                                        {"Gi", 1073741824.0},
                                                        {"Ti", 1099511627776.0},
                                                        {"Pi", 1125899906842624.0},
                                                        {"Ei", 1152921504606846976.0}};
  auto it = kSuffix.find(suffix);
  if (it == kSuffix.end()) return std::nullopt;
  return base * it->second;
}

NodeFacts FactsOf(const Json& node) {
  NodeFacts f;
  const Json& meta = ObjectField(node, "metadata");
  f.name = StringField(meta, "name");
  for (const auto& [k, v] : ObjectField(meta, "labels").items()) {
    if (v.is_string()) f.labels[k] = v.get<std::string>();
  }
  for (const auto& t : ArrayField(ObjectField(node, "spec"), "taints")) {
    NodeTaint taint{StringField(t, "key"), StringField(t, "value"), StringField(t, "effect")};
    if ((taint.effect == "NoSchedule" || taint.effect == "NoExecute") && !PassingTaint(taint.key)) {
      f.taints.push_back(std::move(taint));
    }
  }
  for (const auto& [k, v] : ObjectField(ObjectField(node, "status"), "allocatable").items()) {
    if (!v.is_string()) continue;
    if (auto q = ParseQuantity(v.get<std::string>())) f.allocatable[k] = *q;
  }
  return f;
}

PodFit JudgePodFit(const Json& pod, const std::vector<NodeFacts>& nodes) {
  const Json& spec = ObjectField(pod, "spec");
  const PodShape shape{ObjectField(spec, "nodeSelector"), ArrayField(spec, "tolerations"),
                       ObjectField(ObjectField(ObjectField(spec, "affinity"), "nodeAffinity"),
                                   "requiredDuringSchedulingIgnoredDuringExecution"),
                       Requests(spec)};
  const std::map<std::string, double>& wants = shape.wants;
  struct Reason {
    int nodes = 0;
    double most = 0;  // resources: the largest allocatable among these nodes
  };
  std::map<std::string, Reason> reasons;  // by WhyNot's text
  PodFit fit;
  fit.nodes = static_cast<int>(nodes.size());
  for (const NodeFacts& node : nodes) {
    const std::string why = WhyNot(node, shape);
    if (why.empty()) {
      ++fit.could_run;
      continue;
    }
    Reason& r = reasons[why];
    ++r.nodes;
    const std::string resource = TooSmallIn(why);
    if (!resource.empty()) r.most = std::max(r.most, Allocatable(node, resource));
  }
  if (fit.could_run > 0 || nodes.empty()) return fit;
  std::vector<std::pair<std::string, Reason>> sorted(reasons.begin(), reasons.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second.nodes > b.second.nodes; });
  std::string text;
  for (const auto& [why, r] : sorted) {
    std::string part;
    const std::string resource = TooSmallIn(why);
    if (!resource.empty()) {
      const double want = wants.at(resource);
      part = r.most <= 0 ? "have no " + resource
                         : "offer at most " + Amount(resource, r.most) + " " + resource;
      part += " (the pod requests " + Amount(resource, want) + ")";
    } else {
      part = why;
    }
    text += (text.empty() ? "" : ", ") + std::to_string(r.nodes) + " " + part;
  }
  fit.message = "no node of the cluster could ever run pod " + kube::NameOf(pod) + ": of " +
                std::to_string(nodes.size()) + " node" + (nodes.size() == 1 ? "" : "s") + ", " +
                text;
  return fit;
}

ClusterNodes::ClusterNodes(kube::KubeClient* client, TimeSource* time, Millis max_age)
    : client_(client), time_(time), max_age_(max_age) {}

Result<std::shared_ptr<const std::vector<NodeFacts>>> ClusterNodes::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  const SteadyTime now = time_->Now();
  if (listed_at_ && now - *listed_at_ < max_age_) return nodes_;
  auto nodes = std::make_shared<std::vector<NodeFacts>>();
  kube::ListOptions opts;
  opts.limit = 500;
  do {
    auto page = client_->List(kube::resources::kNodes, "", opts);
    if (!page.ok()) {
      if (page.status().code() != StatusCode::kPermissionDenied) return page.status();
      nodes_ = nullptr;  // not allowed: asked again only after max_age
      listed_at_ = now;
      return nodes_;
    }
    for (const auto& n : page->items) nodes->push_back(FactsOf(n));
    opts.continue_token = page->continue_token;
  } while (!opts.continue_token.empty());
  nodes_ = std::move(nodes);
  listed_at_ = now;
  return nodes_;
}

}  // namespace paratune::controllers
