// Profiles are often exported compressed (torch.profiler writes `*.pt.trace.json.gz`). These
// helpers recognize and inflate gzip (or zlib) data with the zlib that is already installed.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_GZIP_TEXT_H_
#define PARATUNE_AGENTS_KNOWLEDGE_GZIP_TEXT_H_

#include <cstddef>
#include <string>

#include "base/status.h"

namespace paratune {

// True when `data` starts with the gzip magic bytes (1f 8b).
bool IsGzip(const std::string& data);

// The inflated bytes of a gzip stream (concatenated members included). Fails (kInvalidArgument)
// on corrupt or truncated data, or when the output would exceed `max_bytes` (a bomb guard).
Result<std::string> Gunzip(const std::string& data, size_t max_bytes = size_t{1} << 30);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_GZIP_TEXT_H_
