#include "agents/knowledge/workload_fields.h"

#if __has_include("agents/model/workload.h")
#include "agents/model/workload.h"
#define PARATUNE_HAVE_WORKLOAD 1
#endif

namespace paratune {

std::map<std::string, int64_t> WorkloadFields(const Workload* w) {
  std::map<std::string, int64_t> out;
  if (w == nullptr) return out;
#ifdef PARATUNE_HAVE_WORKLOAD
    // Filled in once agents/model/workload.h settles its field names.
#endif
  return out;
}

}  // namespace paratune
