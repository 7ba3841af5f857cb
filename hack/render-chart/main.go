// render-chart renders a Helm chart without Helm: Go's text/template, Sprig (Debian's
// golang-github-masterminds-sprig-dev) and the Helm functions charts use most (include, tpl,
// required, toYaml, fromYaml, lookup, .Files.Get/Glob). It also compares YAML object sets and
// reads fields, for hack/check-chart.sh.
//
//	render-chart template CHART_DIR [-f values.yaml]... [--set k=v]... [--set-string k=v]...
//	             [--name RELEASE] [-n NAMESPACE] [--kube-version vX.Y.Z] [--notes]
//	    Prints the manifests (one "---" document each, in Helm's install order). Exit 1 with
//	    the template's error (file:line) when rendering fails (fail, required, bad values).
//	render-chart diff --want PATH... --got PATH... [--except KIND/NAME]...
//	    PATH: a YAML file, "-" or a directory (its *.yaml). Compares the objects (keyed by
//	    apiVersion, kind, namespace, name) as parsed YAML; exit 1 and one line per difference.
//	render-chart get FILE KIND/NAME .field.path[0]
//	    Prints the field of that object as JSON; exit 1 when the object or field is absent.
//
// Built offline in GOPATH mode: GOPATH=/usr/share/gocode GO111MODULE=off go build.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/Masterminds/semver"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func readAllStdin() ([]byte, error) { return io.ReadAll(os.Stdin) }

func die(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "render-chart: "+format+"\n", args...)
	os.Exit(1)
}

// parseInterleaved parses flags that may come before or after the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) []string {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			os.Exit(2)
		}
		if fs.NArg() == 0 {
			return pos
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// userValues merges the -f files, then --set, then --set-string over the chart's values.
func userValues(vals Values, files, sets, setStrings []string) (Values, error) {
	for _, f := range files {
		v, err := readValuesFile(f)
		if err != nil {
			return nil, err
		}
		vals = mergeValues(vals, v)
	}
	for _, s := range sets {
		if err := applySet(vals, s, false); err != nil {
			return nil, err
		}
	}
	for _, s := range setStrings {
		if err := applySet(vals, s, true); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

// capabilities describes a cluster of version kube (vMAJOR.MINOR.PATCH) serving the usual APIs.
func capabilities(kube string) (Capabilities, error) {
	parts := strings.SplitN(strings.TrimPrefix(kube, "v"), ".", 3)
	if len(parts) < 2 {
		return Capabilities{}, fmt.Errorf("--kube-version: want vMAJOR.MINOR.PATCH, got %q", kube)
	}
	apis := APIVersions{"v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1",
		"coordination.k8s.io/v1", "apiextensions.k8s.io/v1", "networking.k8s.io/v1"}
	// policy/v1 (PodDisruptionBudget) is served from 1.21; policy/v1beta1's PDB until 1.24.
	minor, err := strconv.Atoi(strings.TrimRight(parts[1], "+"))
	if err != nil {
		return Capabilities{}, fmt.Errorf("--kube-version: minor version %q is not a number", parts[1])
	}
	if parts[0] != "1" || minor >= 21 {
		apis = append(apis, "policy/v1")
	}
	if parts[0] == "1" && minor <= 24 {
		apis = append(apis, "policy/v1beta1")
	}
	return Capabilities{
		KubeVersion: KubeVersion{Version: kube, GitVersion: kube, Major: parts[0], Minor: parts[1]},
		APIVersions: apis,
	}, nil
}

func cmdTemplate(args []string) {
	fs := flag.NewFlagSet("template", flag.ContinueOnError)
	var files, sets, setStrings multi
	fs.Var(&files, "f", "values file (repeatable; later wins)")
	fs.Var(&files, "values", "same as -f")
	fs.Var(&sets, "set", "key=value[,key=value] (repeatable)")
	fs.Var(&setStrings, "set-string", "key=value, value kept a string (repeatable)")
	name := fs.String("name", "paratune", "release name")
	ns := fs.String("namespace", "default", "release namespace")
	fs.StringVar(ns, "n", "default", "same as --namespace")
	kube := fs.String("kube-version", "v1.30.0", "Capabilities.KubeVersion")
	notes := fs.Bool("notes", false, "print NOTES.txt (to stderr) after the manifests")
	pos := parseInterleaved(fs, args)
	if len(pos) != 1 {
		die("template: want exactly one chart directory, got %d", len(pos))
	}
	chart, err := loadChart(pos[0])
	if err != nil {
		die("%v", err)
	}
	vals, err := userValues(chart.Values, files, sets, setStrings)
	if err != nil {
		die("%v", err)
	}
	rel := Release{Name: *name, Namespace: *ns, Service: "Helm", IsInstall: true, Revision: 1}
	caps, err := capabilities(*kube)
	if err != nil {
		die("%v", err)
	}
	violations, err := validateSchema(filepath.Join(pos[0], "values.schema.json"), vals)
	if err != nil {
		die("%v", err)
	}
	if len(violations) > 0 {
		die("values don't meet the specifications of %s/values.schema.json:\n- %s",
			chart.Meta.Name, strings.Join(violations, "\n- "))
	}
	if err := checkKubeVersion(chart.Meta.KubeVersion, *kube); err != nil {
		die("%v", err)
	}
	docs, notesText, err := renderChart(chart, vals, rel, caps)
	if err != nil {
		die("%v", err)
	}
	for _, d := range docs {
		fmt.Print("---\n" + d)
	}
	if *notes {
		fmt.Fprint(os.Stderr, notesText)
	}
}

func cmdDiff(args []string) {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	var want, got, except multi
	fs.Var(&except, "except", "KIND/NAME left out of the expected objects (repeatable)")
	fs.Var(&want, "want", "expected objects: file, dir or - (repeatable)")
	fs.Var(&got, "got", "actual objects: file, dir or - (repeatable)")
	if pos := parseInterleaved(fs, args); len(pos) != 0 || len(want) == 0 || len(got) == 0 {
		die("diff: usage: diff --want PATH... --got PATH...")
	}
	w, err := readObjects(want)
	if err != nil {
		die("%v", err)
	}
	w = dropObjects(w, except)
	g, err := readObjects(got)
	if err != nil {
		die("%v", err)
	}
	diffs := diffObjects(w, g)
	for _, d := range diffs {
		fmt.Println(d)
	}
	if len(diffs) > 0 {
		os.Exit(1)
	}
	fmt.Printf("%d objects equal\n", len(w))
}

func cmdGet(args []string) {
	if len(args) != 3 {
		die("get: usage: get FILE KIND/NAME .field.path")
	}
	objs, err := readObjects(args[:1])
	if err != nil {
		die("%v", err)
	}
	kindName := strings.SplitN(args[1], "/", 2)
	if len(kindName) != 2 {
		die("get: want KIND/NAME, got %q", args[1])
	}
	for _, o := range objs {
		m := o.Body.(map[string]interface{})
		meta, _ := m["metadata"].(map[string]interface{})
		if m["kind"] != kindName[0] || meta["name"] != kindName[1] {
			continue
		}
		v, err := lookupPath(o.Body, args[2])
		if err != nil {
			die("%s: %v", args[1], err)
		}
		data, _ := json.Marshal(v)
		fmt.Println(string(data))
		return
	}
	die("get: no %s in %s", args[1], args[0])
}

func main() {
	if len(os.Args) < 2 {
		die("usage: render-chart template|diff|get ... (see %s)", filepath.Base(os.Args[0]))
	}
	switch os.Args[1] {
	case "template":
		cmdTemplate(os.Args[2:])
	case "diff":
		cmdDiff(os.Args[2:])
	case "get":
		cmdGet(os.Args[2:])
	default:
		die("unknown command %q: want template, diff or get", os.Args[1])
	}
}

// checkKubeVersion fails as Helm does when the cluster version is outside Chart.yaml's
// kubeVersion constraint.
func checkKubeVersion(constraint, version string) error {
	if constraint == "" {
		return nil
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return fmt.Errorf("Chart.yaml: kubeVersion: %v", err)
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return fmt.Errorf("--kube-version: %v", err)
	}
	if !c.Check(v) {
		return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s",
			constraint, version)
	}
	return nil
}

// dropObjects removes the objects named KIND/NAME in except.
func dropObjects(objs []object, except []string) []object {
	var out []object
	for _, o := range objs {
		m := o.Body.(map[string]interface{})
		meta, _ := m["metadata"].(map[string]interface{})
		keep := true
		for _, e := range except {
			if e == fmt.Sprintf("%v/%v", m["kind"], meta["name"]) {
				keep = false
			}
		}
		if keep {
			out = append(out, o)
		}
	}
	return out
}
