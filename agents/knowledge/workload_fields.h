// Model fields of a Workload by contract name ("numAttentionHeads" -> 32), for quoting in
// diagnoses. Empty for a null workload.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_WORKLOAD_FIELDS_H_
#define PARATUNE_AGENTS_KNOWLEDGE_WORKLOAD_FIELDS_H_

#include <cstdint>
#include <map>
#include <string>

namespace paratune {

struct Workload;

std::map<std::string, int64_t> WorkloadFields(const Workload* w);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_WORKLOAD_FIELDS_H_
