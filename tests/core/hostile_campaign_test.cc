// Hostile and malformed campaign specs (issue 8): each is refused with an error that names the
// field, quickly and without unbounded memory; none crashes. Several reproduce inputs the
// campaign fuzzers found (fuzz/corpus/campaign_*_fuzzer/regress-*).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "agents/core/campaign.h"
#include "base/json_fields.h"
#include "base/utf8.h"
#include "base/yaml.h"

namespace paratune {
namespace {

// A valid spec to break one field at a time.
nlohmann::json ValidSpec() {
  return nlohmann::json::parse(R"({
    "apiVersion": "tuning.paratune.dev/v1alpha1", "kind": "TuningCampaign",
    "metadata": {"name": "c1"},
    "spec": {"model": {"preset": "llama3-8b"},
             "training": {"globalBatchSize": 256, "seqLength": 4096},
             "hardware": {"accelerator": "nvidia-h100-80gb"},
             "searchSpace": {"parameters": [{"name": "tp", "values": [1, 2, 4]}]},
             "trialTemplate": {"spec": {"template": {"spec": {"containers": [
                 {"name": "train", "command": ["paratune", "trial-sim"]}]}}}}}})");
}

// The error of parsing `object`; fails the test when it parses.
std::string ErrorOf(const nlohmann::json& object) {
  auto c = CampaignFromJson(object);
  EXPECT_FALSE(c.ok());
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  return c.status().message();
}

std::string YamlErrorOf(const std::string& yaml) {
  auto c = CampaignFromYaml(yaml);
  EXPECT_FALSE(c.ok());
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  return c.status().message();
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

TEST(HostileCampaignTest, HugeSearchSpaceParsesAndSaturates) {
  // 12 parameters x 50 values: 50^12 > INT64_MAX points. Parsing is linear in the values; the
  // session samples max_space_points of them (agents/session).
  nlohmann::json j = ValidSpec();
  nlohmann::json params = nlohmann::json::array();
  for (const char* p :
       {"tp", "pp", "vpp", "cp", "ep", "mbs", "recomputeLayers", "firstPipelineStageLayers",
        "lastPipelineStageLayers", "iciData", "iciFsdp", "iciTensor"}) {
    nlohmann::json values = nlohmann::json::array();
    for (int v = 1; v <= 50; ++v) values.push_back(v);
    params.push_back({{"name", p}, {"values", values}});
  }
  j["spec"]["searchSpace"]["parameters"] = params;
  auto c = CampaignFromJson(j);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->SearchSpaceSize(), INT64_MAX);
}

TEST(HostileCampaignTest, ManyValuesAreCheckedForDuplicatesInLinearithmicTime) {
  // 24 parameters x 4096 distinct values (the most the parser accepts): once quadratic (16M
  // comparisons per parameter), now a set.
  nlohmann::json j = ValidSpec();
  nlohmann::json params = nlohmann::json::array();
  for (const char* p : {"tp", "pp", "vpp", "cp", "ep", "mbs", "recomputeLayers",
                        "firstPipelineStageLayers", "lastPipelineStageLayers", "iciData", "iciFsdp",
                        "iciTensor", "iciSequence", "iciExpert", "dcnData", "perDeviceBatchSize"}) {
    nlohmann::json values = nlohmann::json::array();
    for (int v = 1; v <= 4096; ++v) values.push_back(v);
    params.push_back({{"name", p}, {"values", values}});
  }
  j["spec"]["searchSpace"]["parameters"] = params;
  ASSERT_TRUE(CampaignFromJson(j).ok());
  params[3]["values"].push_back(4097);
  j["spec"]["searchSpace"]["parameters"] = params;
  EXPECT_CONTAINS(ErrorOf(j), "spec.searchSpace.parameters[3].values: more than 4096 values");
  params[3]["values"] = {1, 2, 3, 2};
  j["spec"]["searchSpace"]["parameters"] = params;
  EXPECT_CONTAINS(ErrorOf(j), "spec.searchSpace.parameters[3].values[3]: duplicate value 2");
}

TEST(HostileCampaignTest, NegativeAndZeroBudgetsNameTheField) {
  for (const auto& [field, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"maxTrials", 0},
           {"maxTrials", -1},
           {"parallelTrials", 0},
           {"maxFailedTrials", -8},
           {"trialTimeout", "-5m"},
           {"trialTimeout", "0s"},
           {"trialTimeout", 0},
           {"trialTimeout", nlohmann::json::array({1, 2})},
           {"maxTrials", 1e300}}) {
    nlohmann::json j = ValidSpec();
    j["spec"]["budget"][field] = value;
    EXPECT_CONTAINS(ErrorOf(j), "spec.budget." + field);
  }
}

TEST(HostileCampaignTest, UnknownFieldsAreRefusedByName) {
  nlohmann::json j = ValidSpec();
  j["spec"]["budget"]["maxTrails"] = 3;
  EXPECT_CONTAINS(ErrorOf(j), "spec.budget.maxTrails: unknown field");
  j = ValidSpec();
  j["spec"]["searchSpace"]["parameters"][0]["vals"] = 1;
  EXPECT_CONTAINS(ErrorOf(j), "spec.searchSpace.parameters[0].vals: unknown field");
  j = ValidSpec();
  j["spec"]["hardware"][std::string(1 << 20, 'k')] = 1;  // a 1 MiB key is not echoed in full
  std::string e = ErrorOf(j);
  EXPECT_CONTAINS(e, "spec.hardware.kkkk");
  EXPECT_LT(e.size(), 400u);
}

TEST(HostileCampaignTest, MegabyteStringsAreRefusedNamingTheField) {
  const std::string mib(1 << 20, 'x');
  struct Case {
    std::vector<std::string> path;
    std::string field;
  };
  for (const Case& k : std::vector<Case>{
           {{"spec", "hardware", "accelerator"}, "spec.hardware.accelerator"},
           {{"spec", "model", "preset"}, "spec.model.preset"},
           {{"spec", "agents", "llm", "endpoint"}, "spec.agents.llm.endpoint"},
           {{"spec", "hardware", "nodeSelector", "pool"}, "spec.hardware.nodeSelector.pool"},
           {{"spec", "output", "configMapName"}, "spec.output.configMapName"},
           {{"metadata", "name"}, "metadata.name"}}) {
    nlohmann::json j = ValidSpec();
    nlohmann::json* at = &j;
    for (const auto& p : k.path) at = &(*at)[p];
    *at = mib;
    std::string e = ErrorOf(j);
    EXPECT_CONTAINS(e, k.field);
    EXPECT_LT(e.size(), 400u) << k.field;  // the value is not echoed back
  }
  nlohmann::json j = ValidSpec();
  j["spec"]["searchSpace"]["parameters"][0]["name"] = mib;
  EXPECT_CONTAINS(ErrorOf(j), "spec.searchSpace.parameters[0].name");
  // A trial template may carry a script up to 256 KiB, not a megabyte.
  j = ValidSpec();
  auto& cmd = j["spec"]["trialTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"];
  cmd[1] = std::string(200 << 10, 'x');
  EXPECT_TRUE(CampaignFromJson(j).ok());
  cmd[1] = mib;
  EXPECT_CONTAINS(ErrorOf(j),
                  "spec.trialTemplate.spec.template.spec.containers[0].command[1]: "
                  "a string of 1048576 bytes; the limit is 262144");
}

TEST(HostileCampaignTest, DeepNestingIsRefusedNotRecursedInto) {
  // JSON (what the API server serves): 100000 levels inside the trial template.
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  nlohmann::json j = ValidSpec();
  j["spec"]["trialTemplate"]["spec"]["x"] = nlohmann::json::parse(deep);
  EXPECT_CONTAINS(ErrorOf(j), "nested deeper than 64 levels");
  EXPECT_CONTAINS(ErrorOf(j), "spec.trialTemplate.spec.x[0][0]");
  // YAML, flow and block style.
  EXPECT_CONTAINS(YamlErrorOf("spec: " + std::string(5000, '[') + std::string(5000, ']')), "yaml");
  std::string block = "spec:\n";
  for (int i = 0; i < 200; ++i) block += std::string(2 * i + 2, ' ') + "k:\n";
  EXPECT_CONTAINS(YamlErrorOf(block), "deeper than 64 levels");
}

TEST(HostileCampaignTest, AliasBombIsRefusedBeforeExpanding) {
  // "Billion laughs": 9 levels of 10 aliases each would expand to 10^9 strings.
  std::string bomb = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    std::string prev(1, static_cast<char>(c - 1));
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += (i ? ",*" : "*") + prev;
    bomb += "]\n";
  }
  auto j = YamlToJson(bomb);
  ASSERT_FALSE(j.ok());
  EXPECT_CONTAINS(j.status().message(), "too many nodes");
  EXPECT_CONTAINS(YamlErrorOf("kind: TuningCampaign\nspec: {}\n" + bomb), "yaml");
  // A big string repeated through aliases is bounded by bytes, not nodes.
  std::string text = "s: &s " + std::string(100000, 'x') + "\nl: [";
  for (int i = 0; i < 100; ++i) text += (i ? ",*s" : "*s");
  EXPECT_CONTAINS(YamlToJson(text + "]\n").status().message(), "too much text");
  // Ordinary anchors (a shared block used twice) still work.
  auto ok = YamlToJson("base: &b {tp: 1, pp: 2}\nfirst: *b\nsecond: *b\n");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)["second"]["pp"], 2);
}

TEST(HostileCampaignTest, WrongTypesNameTheField) {
  struct Case {
    std::vector<std::string> path;
    nlohmann::json value;
    std::string field;
  };
  for (const Case& k : std::vector<Case>{
           {{"spec", "budget", "maxTrials"}, "ten", "spec.budget.maxTrials: must be an integer"},
           {{"spec", "hardware"}, 5, "spec.hardware: must be an object"},
           {{"spec", "hardware", "nodes"}, 1e300, "spec.hardware.nodes"},
           {{"spec", "searchSpace"}, nlohmann::json::array(), "spec.searchSpace"},
           {{"spec", "searchSpace", "parameters"}, "tp", "spec.searchSpace.parameters"},
           {{"spec", "objective", "target"}, "high", "spec.objective.target: must be a number"},
           {{"spec", "trialTemplate"}, "job.yaml", "spec.trialTemplate"},
           {{"metadata", "name"}, 5, "metadata.name: must be a string"},
           {{"metadata", "namespace"}, nlohmann::json::array(), "metadata.namespace"},
           {{"spec", "agents", "knowledgeConfigMaps"},
            nlohmann::json::array({1}),
            "spec.agents.knowledgeConfigMaps[0]"}}) {
    nlohmann::json j = ValidSpec();
    nlohmann::json* at = &j;
    for (const auto& p : k.path) at = &(*at)[p];
    *at = k.value;
    EXPECT_CONTAINS(ErrorOf(j), k.field);
  }
  // Integers far outside int64 in a parameter value or the baseline (undefined to convert).
  nlohmann::json j = ValidSpec();
  j["spec"]["searchSpace"]["parameters"][0]["values"] = {1, 1e300};
  EXPECT_CONTAINS(ErrorOf(j), "spec.searchSpace.parameters[0].values[1]: 1e+300 is out of range");
  j = ValidSpec();
  j["spec"]["baseline"] = {{"tp", -1e300}};
  EXPECT_CONTAINS(ErrorOf(j), "spec.baseline.tp");
}

TEST(HostileCampaignTest, YamlTypingKeepsNonNumbersAsStrings) {
  auto j = YamlToJson("a: .nan\nb: nan\nc: inf\nd: 1e999\ne: 0x1F\nf: -12\ng: 2.5e3\n");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  for (const char* k : {"a", "b", "c", "d", "e"}) EXPECT_TRUE((*j)[k].is_string()) << k;
  EXPECT_EQ((*j)["f"], -12);
  EXPECT_EQ((*j)["g"], 2500.0);
  // A NaN target is a string, refused by name (it once became a NaN number).
  EXPECT_CONTAINS(YamlErrorOf("spec: {objective: {target: .nan}, model: {preset: x}, training: "
                              "{globalBatchSize: 8}, hardware: {accelerator: a}, searchSpace: "
                              "{parameters: [{name: tp, values: [1]}]}}"),
                  "spec.objective.target");
}

TEST(HostileCampaignTest, InvalidUtf8IsRefusedWithItsPosition) {
  // Found by campaign_yaml_fuzzer: the JSON of such a document could not be written (dump threw).
  auto j = YamlToJson("spec:\n  model: {preset: \"ll\xC3\x28ma\"}\n");
  ASSERT_FALSE(j.ok());
  EXPECT_CONTAINS(j.status().message(), "line 2");
  EXPECT_CONTAINS(j.status().message(), "not valid UTF-8");
  EXPECT_FALSE(YamlToJson("k\xFF: 1\n").ok());  // in a key
  EXPECT_TRUE(YamlToJson("name: \"caf\xC3\xA9 \xE2\x9C\x93\"\n").ok());
}

TEST(HostileCampaignTest, OddDocumentsNeverThrow) {
  // Found by reading: a non-string kind in a multi-document file, a non-string metadata.name,
  // keys that are lists.
  EXPECT_CONTAINS(YamlErrorOf("kind: [1]\n---\nkind: {a: 1}\n"), "kind");
  EXPECT_CONTAINS(YamlErrorOf("? [a, b]\n: 1\n"), "map key");
  EXPECT_FALSE(CampaignFromJson(nlohmann::json::parse(R"({"kind": 5, "spec": {}})")).ok());
  EXPECT_FALSE(CampaignFromYaml("").ok());
  EXPECT_FALSE(CampaignFromYaml("---\n---\n").ok());
  EXPECT_FALSE(CampaignFromYaml(std::string("\0\0\0", 3)).ok());
}

TEST(JsonExcerptTest, ShortPrintableAndValidUtf8) {
  EXPECT_EQ(JsonExcerpt(nlohmann::json(3)), "3");
  EXPECT_EQ(JsonExcerpt(nlohmann::json::array({1, 2})), "a list of 2");
  EXPECT_EQ(JsonExcerpt(nlohmann::json::object()), "an object of 0 fields");
  EXPECT_EQ(TextExcerpt(std::string(100, 'a'), 10), "aaaaaaaaaa... (100 bytes)");
  EXPECT_EQ(TextExcerpt("a\nb\xFF"), "a?b\xEF\xBF\xBD");
  EXPECT_TRUE(IsValidUtf8(TextExcerpt("\xC0\x80\xED\xA0\x80 ok")));
  EXPECT_FALSE(IsValidUtf8("\xC0\x80"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));  // surrogate
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\x98\x80"));
}

}  // namespace
}  // namespace paratune

namespace paratune {
namespace {

// yaml-cpp 0.7's document loop never ends (allocating gigabytes) when a document begins at a
// token no node can start with: jbeder/yaml-cpp#1040, fixed upstream by #1319. Every input here
// was found by campaign_yaml_fuzzer in CI, across sessions 3-9, as the text-level pre-check that
// tried to foresee them was extended one shape at a time; the document loop now notices that a
// document consumed nothing, so each is refused with its position, and so is any new shape.
TEST(HostileCampaignTest, DocumentsThatYamlCppNeverFinishesAreRefusedNotAHang) {
  for (const char* text : {",b\n",
                           "# the key\n    ,*dtpu-v5e -API-KEY\n",
                           "a: 1\n...\n,b\n",
                           "%YAML 1.2\n---\n,b\n",
                           "--- ,b\n",
                           "\xEF\xBB\xBF,b\n",
                           "a:\n    metric: tokensPerSecondPerDevice\n ,budged:\n",
                           "\"x\" ,y\n",
                           "'x' ,y\n",
                           "\"x\",y\n",
                           "[a] ,b\n",
                           "{a: 1} , b\n",
                           "# k\n  \" ,*dt p \\\n  \" ,*dtobjective -API-KEY\n",
                           "&a ,b\n",
                           "&a ,\n",
                           "!t ,b\n",
                           "&a !t , b\n",
                           "- &a ,b\n",
                           "k: &a ,b\n",
                           "# The AP\xbc\x96\x87"
                           "fs__p   \\\n&.. ,*dt\xac"
                           "p_p   \\\n $  ,*dthl LLM\n",
                           ">#{\n\"\",\n",
                           "!!int >#{\n\"\",",
                           "!t\xf3\xf3#{\n\"\","}) {
    auto r = YamlToJson(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().message().rfind("yaml: line ", 0), 0u) << r.status().message();
  }
  auto stuck = YamlToJson("a: 1\n---\n,b\n");
  ASSERT_FALSE(stuck.ok());
  EXPECT_EQ(stuck.status().message(),
            "yaml: line 3, column 1: no YAML node can begin here (a ',' outside a flow "
            "collection?)");
  // Commas inside flow collections (also across lines), quoted scalars, plain scalars and block
  // scalars stay valid, and so do anchors, aliases, tags and block scalar headers.
  auto flow = YamlToJson("values: [1\n  ,2]\n");
  ASSERT_TRUE(flow.ok()) << flow.status().message();
  EXPECT_EQ((*flow)["values"].size(), 2u);
  auto seq = YamlToJson("[1\n,2]\n");
  ASSERT_TRUE(seq.ok()) << seq.status().message();
  auto text = YamlToJson("a: |\n  , literal\n  , text\nb: >-\n  , folded\nc: '[x'\nd: 1\n");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ((*text)["a"], ", literal\n, text\n");
  auto escaped = YamlToJson("a: \"x\\\", y\"\nb: 'it''s, ok'\nc: plain, text\nd: [1, 2]\n");
  ASSERT_TRUE(escaped.ok()) << escaped.status().message();
  EXPECT_EQ((*escaped)["a"], "x\", y");
  EXPECT_EQ((*escaped)["b"], "it's, ok");
  EXPECT_EQ((*escaped)["c"], "plain, text");
  auto fine = YamlToJson(
      "a: &x 1\nb: *x\nc: !!str 2\nd: [&y 3, *y]\ne: text &z, more\nf: >- # folded\n  x\n"
      "g: |2\n   y\nh: x > y\ni: !!str |\n  z\n&k key: *k\n");
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  EXPECT_EQ((*fine)["b"], 1);
  EXPECT_EQ((*fine)["d"], nlohmann::json::parse("[3, 3]"));
  EXPECT_EQ((*fine)["e"], "text &z, more");
  EXPECT_EQ((*fine)["f"], "x");
  EXPECT_EQ((*fine)["h"], "x > y");
  EXPECT_EQ((*fine)["i"], "z\n");
  EXPECT_EQ((*fine)["key"], "key");
  // Several documents are an array of them; an empty stream is an empty array.
  auto docs = YamlToJson("a: 1\n---\n- 2\n---\n");
  ASSERT_TRUE(docs.ok()) << docs.status().message();
  EXPECT_EQ(*docs, nlohmann::json::parse(R"([{"a": 1}, [2], null])"));
  auto none = YamlToJson("");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nlohmann::json::array());
}

}  // namespace
}  // namespace paratune
