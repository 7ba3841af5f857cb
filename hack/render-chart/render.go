package main

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	yaml2 "gopkg.in/yaml.v2"
	yaml "gopkg.in/yaml.v3"
)

// ChartMeta is the part of Chart.yaml templates read as .Chart.
type ChartMeta struct {
	APIVersion  string `yaml:"apiVersion"`
	Name        string `yaml:"name"`
	Version     string `yaml:"version"`
	AppVersion  string `yaml:"appVersion"`
	Description string `yaml:"description"`
	Type        string `yaml:"type"`
	KubeVersion string `yaml:"kubeVersion"`
	Home        string `yaml:"home"`
}

// Release is .Release of an install.
type Release struct {
	Name, Namespace, Service string
	IsInstall, IsUpgrade     bool
	Revision                 int
}

// Files is .Files: the chart's files outside templates/ (Get, Glob, range).
type Files map[string][]byte

// Get returns a file's text, "" when absent (as Helm does).
func (f Files) Get(name string) string { return string(f[name]) }

// Glob returns the files whose chart-relative path matches pattern (path.Match syntax).
func (f Files) Glob(pattern string) Files {
	out := Files{}
	for name, data := range f {
		if ok, _ := path.Match(pattern, name); ok {
			out[name] = data
		}
	}
	return out
}

// APIVersions is .Capabilities.APIVersions.
type APIVersions []string

// Has reports whether the fake cluster serves apiVersion (group/version or group/version/Kind).
func (a APIVersions) Has(v string) bool {
	for _, x := range a {
		if x == v || strings.HasPrefix(v, x+"/") {
			return true
		}
	}
	return false
}

// KubeVersion is .Capabilities.KubeVersion.
type KubeVersion struct{ Version, Major, Minor, GitVersion string }

// Capabilities is the minimal .Capabilities of the local control plane.
type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions APIVersions
}

// Chart is a loaded chart directory.
type Chart struct {
	Meta      ChartMeta
	Values    Values
	Files     Files
	Templates map[string]string // "<chart>/templates/<file>" -> text
}

// loadChart reads dir: Chart.yaml, values.yaml, templates/ and every other file as .Files.
func loadChart(dir string) (*Chart, error) {
	c := &Chart{Files: Files{}, Templates: map[string]string{}}
	meta, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(meta, &c.Meta); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %v", err)
	}
	if c.Meta.Name == "" {
		return nil, fmt.Errorf("Chart.yaml: name: required")
	}
	if c.Values, err = readValuesFile(filepath.Join(dir, "values.yaml")); err != nil {
		return nil, err
	}
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(rel, "templates/"):
			c.Templates[c.Meta.Name+"/"+rel] = string(data)
		case rel != "Chart.yaml" && rel != "values.yaml" && rel != ".helmignore":
			c.Files[rel] = data
		}
		return nil
	})
	return c, err
}

// toYAML is Helm's toYaml: block YAML, 2-space indent, no trailing newline; "" on error.
func toYAML(v interface{}) string {
	data, err := yaml2.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

// fromYAML is Helm's fromYaml: a map, or {"Error": msg} when the text is not a YAML map.
func fromYAML(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

// funcMap is Sprig's text functions plus Helm's own (include, tpl, required, toYaml, ...).
// include and tpl close over *root, the parsed template set.
func funcMap(root **template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env") // Helm removes these: a chart must not read the renderer's environment.
	delete(f, "expandenv")
	f["toYaml"] = toYAML
	f["fromYaml"] = fromYAML
	f["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := (*root).ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := (*root).Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		var buf bytes.Buffer
		err = t.Execute(&buf, data)
		return strings.ReplaceAll(buf.String(), "<no value>", ""), err
	}
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, fmt.Errorf("%s", msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	f["lookup"] = func(string, string, string, string) map[string]interface{} {
		return map[string]interface{}{} // no cluster: as `helm template`
	}
	return f
}

// renderChart executes every template except partials (_*) and returns the manifests (each
// non-empty YAML document, sorted in Helm's install order by kind) and the rendered NOTES.txt.
func renderChart(c *Chart, vals Values, rel Release, caps Capabilities) ([]string, string, error) {
	var root *template.Template
	root = template.New("chart").Funcs(funcMap(&root))
	names := make([]string, 0, len(c.Templates))
	for name := range c.Templates {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := root.New(name).Parse(c.Templates[name]); err != nil {
			return nil, "", err
		}
	}
	var docs []string
	notes := ""
	for _, name := range names {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") {
			continue
		}
		top := map[string]interface{}{
			"Values": vals, "Release": rel, "Chart": c.Meta, "Files": c.Files,
			"Capabilities": caps,
			"Template":     map[string]interface{}{"Name": name, "BasePath": c.Meta.Name + "/templates"},
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, top); err != nil {
			return nil, "", err
		}
		out := strings.ReplaceAll(buf.String(), "<no value>", "")
		if base == "NOTES.txt" {
			notes = out
			continue
		}
		for _, doc := range splitDocuments(out) {
			docs = append(docs, "# Source: "+name+"\n"+doc)
		}
	}
	sort.SliceStable(docs, func(i, j int) bool { return kindRank(docs[i]) < kindRank(docs[j]) })
	return docs, notes, nil
}

// splitDocuments splits a YAML stream on "---" lines, dropping documents without content.
func splitDocuments(stream string) []string {
	var docs []string
	var cur []string
	flush := func() {
		doc := strings.Join(cur, "\n")
		cur = nil
		var v interface{}
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil || v != nil {
			docs = append(docs, strings.Trim(doc, "\n")+"\n") // errors surface in the caller's parse
		}
	}
	for _, line := range strings.Split(stream, "\n") {
		if strings.TrimRight(line, " ") == "---" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return docs
}

// installOrder is Helm's kind order (kinds not listed go last), so that `kubectl apply -f`
// of the output creates namespaces and CRDs before what lives in them.
var installOrder = []string{"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
	"ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
	"CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
	"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
	"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
	"APIService"}

func kindRank(doc string) int {
	var head struct {
		Kind string `yaml:"kind"`
	}
	_ = yaml.Unmarshal([]byte(doc), &head)
	for i, k := range installOrder {
		if k == head.Kind {
			return i
		}
	}
	return len(installOrder)
}
