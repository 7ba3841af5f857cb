// The transport-independent parts of the REST client: URL paths, request bodies, the mapping of
// HTTP responses to Status, and the watch stream's line framing. Pure functions (plus
// LineSplitter, which is thread-compatible), tested without a server.
#ifndef PARATUNE_OPERATOR_REST_REQUEST_H_
#define PARATUNE_OPERATOR_REST_REQUEST_H_

#include <exception>
#include <functional>
#include <string>

#include "operator/kube_client.h"

namespace paratune::kube {

// /api/v1/namespaces/NS/pods/NAME/SUB or /apis/G/V/PLURAL (ns ignored when cluster-scoped or "").
std::string ResourcePath(const GroupVersionResource& gvr, const std::string& ns,
                         const std::string& name, const std::string& subresource = "");
std::string PatchContentType(PatchType type);
Json DeleteBody(const DeleteOptions& opts);
// A List response into items (apiVersion/kind filled in), resourceVersion and continue token.
Result<ObjectList> ParseList(const GroupVersionResource& gvr, const Json& list);
// Maps a non-2xx response (its body usually a metav1.Status) to a Status; see kube_client.h.
Status StatusFromResponse(int code, const std::string& body, bool is_create);
// A transport failure (connection refused, TLS, timeout): kUnavailable or kDeadlineExceeded.
Status TransportError(const std::exception& e, const std::string& context);

// Splits a byte stream into lines, keeping a partial last line for the next chunk.
class LineSplitter {
 public:
  // Calls on_line for each complete non-empty line; stops at the first non-ok status it returns.
  Status Feed(const std::string& chunk,
              const std::function<Status(const std::string& line)>& on_line);
  const std::string& pending() const { return pending_; }

 private:
  std::string pending_;
};

// Decodes one watch line ({"type": ..., "object": ...}) and calls handler. ERROR events become
// their Status (410 -> kGone). Returns kFailedPrecondition when the handler asked to stop.
Status DispatchWatchLine(const std::string& line, const WatchHandler& handler);

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_REST_REQUEST_H_
