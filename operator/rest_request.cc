#include "operator/rest_request.h"

namespace paratune::kube {

std::string ResourcePath(const GroupVersionResource& gvr, const std::string& ns,
                         const std::string& name, const std::string& subresource) {
  std::string path =
      gvr.group.empty() ? "/api/" + gvr.version : "/apis/" + gvr.group + "/" + gvr.version;
  if (gvr.namespaced && !ns.empty()) path += "/namespaces/" + ns;
  path += "/" + gvr.plural;
  if (!name.empty()) path += "/" + name;
  if (!name.empty() && !subresource.empty()) path += "/" + subresource;
  return path;
}

std::string PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategic:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

Json DeleteBody(const DeleteOptions& opts) {
  Json body{{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!opts.propagation_policy.empty()) body["propagationPolicy"] = opts.propagation_policy;
  if (opts.grace_period_seconds) body["gracePeriodSeconds"] = *opts.grace_period_seconds;
  if (!opts.precondition_uid.empty()) body["preconditions"]["uid"] = opts.precondition_uid;
  if (!opts.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = opts.precondition_resource_version;
  }
  return body;
}

Result<ObjectList> ParseList(const GroupVersionResource& gvr, const Json& list) {
  if (!list.is_object() || !list.contains("items")) {
    return Status::Internal("list of " + gvr.GroupResource() + ": no items field");
  }
  ObjectList out;
  const Json& meta = list.value("metadata", Json::object());
  out.resource_version = meta.value("resourceVersion", "");
  out.continue_token = meta.value("continue", "");
  if (!list["items"].is_array()) return out;
  out.items.reserve(list["items"].size());
  for (const Json& item : list["items"]) {
    Json obj = item;
    if (!obj.contains("apiVersion")) obj["apiVersion"] = gvr.ApiVersion();
    if (!obj.contains("kind") && !gvr.kind.empty()) obj["kind"] = gvr.kind;
    out.items.push_back(std::move(obj));
  }
  return out;
}

Status StatusFromResponse(int code, const std::string& body, bool is_create) {
  std::string message;
  std::string reason;
  try {
    Json status = Json::parse(body);
    message = status.value("message", "");
    reason = status.value("reason", "");
  } catch (const std::exception&) {
    message = body.substr(0, 512);
  }
  if (message.empty()) message = "HTTP " + std::to_string(code);
  switch (code) {
    case 400:
    case 422:
      return Status::Invalid(message);
    case 401:
      return Status(StatusCode::kUnauthenticated, message);
    case 403:
      return Status(StatusCode::kPermissionDenied, message);
    case 404:
      return Status::NotFound(message);
    case 409:
      if (is_create || reason == "AlreadyExists") {
        return Status(StatusCode::kAlreadyExists, message);
      }
      return Status::Conflict(message);
    case 410:
      return Status(StatusCode::kGone, message);
    case 504:
      return Status::Deadline(message);
    default:
      if (code == 429 || code >= 500) return Status::Unavailable(message);
      return Status::Internal("unexpected HTTP " + std::to_string(code) + ": " + message);
  }
}

Status TransportError(const std::exception& e, const std::string& context) {
  std::string what = e.what();
  if (what.find("timed out") != std::string::npos || what.find("timeout") != std::string::npos) {
    return Status::Deadline(context + ": " + what);
  }
  return Status::Unavailable(context + ": " + what);
}

Status LineSplitter::Feed(const std::string& chunk,
                          const std::function<Status(const std::string& line)>& on_line) {
  pending_ += chunk;
  size_t start = 0;
  while (true) {
    size_t nl = pending_.find('\n', start);
    if (nl == std::string::npos) break;
    std::string line = pending_.substr(start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    Status s = on_line(line);
    if (!s.ok()) {
      pending_.erase(0, start);
      return s;
    }
  }
  pending_.erase(0, start);
  return Status::Ok();
}

Status DispatchWatchLine(const std::string& line, const WatchHandler& handler) {
  Json ev;
  try {
    ev = Json::parse(line);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("watch: malformed event: ") + e.what());
  }
  std::string type = ev.value("type", "");
  WatchEvent out;
  if (type == "ADDED") {
    out.type = WatchEvent::Type::kAdded;
  } else if (type == "MODIFIED") {
    out.type = WatchEvent::Type::kModified;
  } else if (type == "DELETED") {
    out.type = WatchEvent::Type::kDeleted;
  } else if (type == "BOOKMARK") {
    out.type = WatchEvent::Type::kBookmark;
  } else if (type == "ERROR") {
    const Json& obj = ev.value("object", Json::object());
    return StatusFromResponse(obj.value("code", 500), obj.dump(), false);
  } else {
    return Status::Internal("watch: unknown event type \"" + type + "\"");
  }
  out.object = std::move(ev["object"]);
  if (!handler(out)) return Status::Precondition("watch handler stopped");
  return Status::Ok();
}

}  // namespace paratune::kube
