package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeChart(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func render(t *testing.T, dir string, sets ...string) ([]string, error) {
	t.Helper()
	c, err := loadChart(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		if err := applySet(c.Values, s, false); err != nil {
			t.Fatal(err)
		}
	}
	docs, _, err := renderChart(c, c.Values, Release{Name: "rel", Namespace: "ns"}, Capabilities{})
	return docs, err
}

func TestRenderHelmIdioms(t *testing.T) {
	dir := writeChart(t, map[string]string{
		"Chart.yaml":       "name: demo\nversion: 0.1.0\nappVersion: \"1.2\"\n",
		"values.yaml":      "labels: {a: b}\nmsg: hi\nlist: [x, y]\n",
		"files/x.txt":      "from a file",
		"templates/_h.tpl": `{{- define "demo.name" -}}{{ .Chart.Name }}-{{ .Release.Name }}{{- end }}`,
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "demo.name" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- toYaml .Values.labels | nindent 4 }}
data:
  version: {{ .Chart.AppVersion | quote }}
  tpl: {{ tpl "{{ .Values.msg }}!" . }}
  {{- range $p, $_ := .Files.Glob "files/*.txt" }}
  file: {{ $.Files.Get $p | quote }}
  {{- end }}
  list: {{ join "," .Values.list }}
  missing: "{{ .Values.nope }}"
`,
		"templates/empty.yaml": "{{- if .Values.nope }}\nkind: X\n{{- end }}\n",
		"templates/NOTES.txt":  "not a manifest",
	})
	docs, err := render(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("want 1 document (empty and NOTES skipped), got %d: %q", len(docs), docs)
	}
	objs, err := parseObjects("cm", []byte(docs[0]))
	if err != nil {
		t.Fatal(err)
	}
	data := objs[0].Body.(map[string]interface{})["data"]
	want := map[string]interface{}{"version": "1.2", "tpl": "hi!", "file": "from a file",
		"list": "x,y", "missing": ""}
	if !reflect.DeepEqual(data, want) {
		t.Errorf("data = %v, want %v", data, want)
	}
	if objs[0].Key != "v1 ConfigMap ns/demo-rel" {
		t.Errorf("key = %q", objs[0].Key)
	}
}

func TestRequiredAndFailNameTheValue(t *testing.T) {
	dir := writeChart(t, map[string]string{
		"Chart.yaml":  "name: demo\nversion: 0.1.0\n",
		"values.yaml": "name: \"\"\n",
		"templates/a.yaml": `kind: A
metadata: {name: {{ required "name: required" .Values.name }}}
`,
	})
	if _, err := render(t, dir); err == nil || !strings.Contains(err.Error(), "name: required") {
		t.Fatalf("want the required error, got %v", err)
	}
	if _, err := render(t, dir, "name=x"); err != nil {
		t.Fatalf("with name set: %v", err)
	}
}

func TestSetTypesListsAndNullDeletes(t *testing.T) {
	v := Values{"a": map[string]interface{}{"keep": 1, "drop": 2}}
	if err := applySet(v, "a.drop=null,a.n=3,a.b=true,a.s=007,l={x,y},e={}", false); err != nil {
		t.Fatal(err)
	}
	want := Values{"a": map[string]interface{}{"keep": 1, "n": int64(3), "b": true, "s": "007"},
		"l": []interface{}{"x", "y"}, "e": []interface{}{}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %v, want %v", v, want)
	}
	if err := applySet(v, "n=3", true); err != nil || v["n"] != "3" {
		t.Errorf("--set-string: got %#v (%v)", v["n"], err)
	}
	if err := applySet(v, "novalue", false); err == nil {
		t.Error("--set without = accepted")
	}
}

func TestMergeValuesDeepAndNull(t *testing.T) {
	dst := Values{"m": map[string]interface{}{"a": 1, "b": 2}, "x": 1}
	src := Values{"m": map[string]interface{}{"b": 3}, "x": nil}
	got := mergeValues(dst, src)
	want := Values{"m": map[string]interface{}{"a": 1, "b": 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestDiffObjectsSeesTypesMissingAndExtra(t *testing.T) {
	want, _ := parseObjects("w", []byte("kind: A\nmetadata: {name: a}\nspec: {cpu: \"1\", l: [1, 2]}\n---\nkind: B\nmetadata: {name: b}\n"))
	got, _ := parseObjects("g", []byte("# comment\nmetadata: {name: a}\nkind: A\nspec:\n  cpu: 1\n  l: [1, 3]\n---\nkind: C\nmetadata: {name: c}\n"))
	diffs := strings.Join(diffObjects(want, got), "\n")
	for _, s := range []string{`.spec.cpu: manifests have "1", the chart renders 1`, ".spec.l[1]",
		"missing from the chart: <nil> B /b", "only in the chart: <nil> C /c"} {
		if !strings.Contains(diffs, s) {
			t.Errorf("diff lacks %q:\n%s", s, diffs)
		}
	}
	same, _ := parseObjects("s", []byte("kind: A\nmetadata:\n  name: a\nspec:\n  l: [1, 2]\n  cpu: '1'\n"))
	if d := diffObjects(want[:1], same); len(d) != 0 {
		t.Errorf("equal objects differ: %v", d)
	}
}

func TestLookupPath(t *testing.T) {
	objs, _ := parseObjects("x", []byte("kind: A\nmetadata: {name: a}\nspec: {c: [{args: [p, q]}]}\n"))
	v, err := lookupPath(objs[0].Body, ".spec.c[0].args[1]")
	if err != nil || v != "q" {
		t.Errorf("got %v, %v", v, err)
	}
	if _, err := lookupPath(objs[0].Body, ".spec.c[3]"); err == nil {
		t.Error("out-of-range index found")
	}
	if _, err := lookupPath(objs[0].Body, ".spec.nope"); err == nil {
		t.Error("absent field found")
	}
}

func TestSchemaNamesEachViolation(t *testing.T) {
	dir := writeChart(t, map[string]string{
		"values.schema.json": `{"type": "object", "additionalProperties": false, "properties": {
			"n": {"type": "integer", "minimum": 1},
			"f": {"type": "string", "enum": ["a", "b"]},
			"m": {"type": "object", "required": ["k"], "properties": {"k": {"type": "boolean"}}},
			"l": {"type": "array", "items": {"type": "string"}}}}`,
	})
	ok := Values{"n": float64(2), "f": "a", "m": map[string]interface{}{"k": true}, "l": []interface{}{"x"}}
	if v, err := validateSchema(filepath.Join(dir, "values.schema.json"), ok); err != nil || len(v) != 0 {
		t.Fatalf("valid values refused: %v %v", v, err)
	}
	bad := Values{"n": float64(0.5), "f": "c", "m": map[string]interface{}{}, "l": []interface{}{1}, "typo": 1}
	v, err := validateSchema(filepath.Join(dir, "values.schema.json"), bad)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(v, "\n")
	for _, s := range []string{"n: invalid type: want integer, got number", "f: must be one of [a b], got c",
		"m.k: required", "l[0]: invalid type: want string, got integer", "typo: unknown value"} {
		if !strings.Contains(got, s) {
			t.Errorf("violations lack %q:\n%s", s, got)
		}
	}
	if v, err := validateSchema(filepath.Join(dir, "absent.json"), bad); err != nil || v != nil {
		t.Errorf("absent schema: %v %v", v, err)
	}
}

func TestCapabilitiesFollowTheKubeVersion(t *testing.T) {
	for _, tc := range []struct {
		version           string
		policyV1, v1beta1 bool
	}{{"v1.20.2", false, true}, {"v1.21.0", true, true}, {"v1.24.3", true, true},
		{"v1.30.0", true, false}, {"v1.22+.1", true, true}} {
		caps, err := capabilities(tc.version)
		if err != nil {
			t.Fatalf("%s: %v", tc.version, err)
		}
		if got := caps.APIVersions.Has("policy/v1/PodDisruptionBudget"); got != tc.policyV1 {
			t.Errorf("%s: Has(policy/v1/PodDisruptionBudget) = %v, want %v", tc.version, got, tc.policyV1)
		}
		if got := caps.APIVersions.Has("policy/v1beta1"); got != tc.v1beta1 {
			t.Errorf("%s: Has(policy/v1beta1) = %v, want %v", tc.version, got, tc.v1beta1)
		}
	}
	if _, err := capabilities("v1.x.0"); err == nil || !strings.Contains(err.Error(), "--kube-version") {
		t.Errorf("v1.x.0: want an error naming --kube-version, got %v", err)
	}
}
