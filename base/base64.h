// Standard base64 (RFC 4648, '+' and '/'), as Kubernetes writes Secret data and kubeconfig
// *-data fields.
#ifndef PARATUNE_BASE_BASE64_H_
#define PARATUNE_BASE_BASE64_H_

#include <string>
#include <string_view>

#include "base/status.h"

namespace paratune {

// Decodes `text`; whitespace (line breaks of wrapped output) is skipped, '=' padding may only
// end it. kInvalidArgument "not base64" otherwise.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace paratune

#endif  // PARATUNE_BASE_BASE64_H_
