package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	yaml "gopkg.in/yaml.v3"
)

// object is one parsed Kubernetes object and where it came from.
type object struct {
	Key    string // apiVersion kind namespace/name
	Source string
	Body   interface{}
}

// readObjects parses every YAML document of the given files, or of the *.yaml/*.yml files
// directly inside the given directories ("-" is stdin). Empty documents are skipped; a
// document without kind or metadata.name is an error naming its source.
func readObjects(paths []string) ([]object, error) {
	var objs []object
	for _, p := range paths {
		files := []string{p}
		if info, err := os.Stat(p); err == nil && info.IsDir() {
			files = nil
			for _, pat := range []string{"*.yaml", "*.yml"} {
				m, _ := filepath.Glob(filepath.Join(p, pat))
				files = append(files, m...)
			}
			sort.Strings(files)
		}
		for _, f := range files {
			var data []byte
			var err error
			if f == "-" {
				data, err = readAllStdin()
			} else {
				data, err = os.ReadFile(f)
			}
			if err != nil {
				return nil, err
			}
			got, err := parseObjects(f, data)
			if err != nil {
				return nil, err
			}
			objs = append(objs, got...)
		}
	}
	return objs, nil
}

func parseObjects(source string, data []byte) ([]object, error) {
	var objs []object
	for i, doc := range splitDocuments(string(data)) {
		var body interface{}
		if err := yaml.Unmarshal([]byte(doc), &body); err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", source, i+1, err)
		}
		m, ok := body.(map[string]interface{})
		if !ok {
			return nil, fmt.Errorf("%s: document %d: not a map", source, i+1)
		}
		meta, _ := m["metadata"].(map[string]interface{})
		name, _ := meta["name"].(string)
		kind, _ := m["kind"].(string)
		if kind == "" || name == "" {
			return nil, fmt.Errorf("%s: document %d: kind and metadata.name: required", source, i+1)
		}
		ns, _ := meta["namespace"].(string)
		key := fmt.Sprintf("%v %s %s/%s", m["apiVersion"], kind, ns, name)
		objs = append(objs, object{Key: key, Source: source, Body: body})
	}
	return objs, nil
}

// diffObjects compares want and got as sets of parsed objects (order, comments and YAML style
// do not matter; types do: "1" differs from 1). It returns one line per difference.
func diffObjects(want, got []object) []string {
	var out []string
	index := func(objs []object) map[string]object {
		m := map[string]object{}
		for _, o := range objs {
			if prev, dup := m[o.Key]; dup {
				out = append(out, fmt.Sprintf("duplicate %s (%s and %s)", o.Key, prev.Source, o.Source))
			}
			m[o.Key] = o
		}
		return m
	}
	w, g := index(want), index(got)
	keys := map[string]bool{}
	for k := range w {
		keys[k] = true
	}
	for k := range g {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		wo, inW := w[k]
		go_, inG := g[k]
		switch {
		case !inG:
			out = append(out, fmt.Sprintf("missing from the chart: %s (%s)", k, wo.Source))
		case !inW:
			out = append(out, fmt.Sprintf("only in the chart: %s (%s)", k, go_.Source))
		default:
			for _, d := range diffValues("", wo.Body, go_.Body) {
				out = append(out, k+": "+d)
			}
		}
	}
	return out
}

func diffValues(at string, want, got interface{}) []string {
	wm, wIsMap := want.(map[string]interface{})
	gm, gIsMap := got.(map[string]interface{})
	if wIsMap && gIsMap {
		var out []string
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range gm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			out = append(out, diffValues(at+"."+k, wm[k], gm[k])...)
		}
		return out
	}
	wl, wIsList := want.([]interface{})
	gl, gIsList := got.([]interface{})
	if wIsList && gIsList && len(wl) == len(gl) {
		var out []string
		for i := range wl {
			out = append(out, diffValues(at+"["+strconv.Itoa(i)+"]", wl[i], gl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(want, got) {
		return nil
	}
	return []string{fmt.Sprintf("%s: manifests have %s, the chart renders %s", at, show(want), show(got))}
}

func show(v interface{}) string {
	if v == nil {
		return "(absent)"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// lookupPath returns the value at a path like .spec.template.spec.containers[0].args.
func lookupPath(v interface{}, p string) (interface{}, error) {
	p = strings.TrimPrefix(p, ".")
	if p == "" {
		return v, nil
	}
	for _, seg := range strings.Split(p, ".") {
		name := seg
		var idx []int
		if b := strings.IndexByte(seg, '['); b >= 0 {
			name = seg[:b]
			for _, part := range strings.Split(strings.TrimSuffix(seg[b+1:], "]"), "][") {
				n, err := strconv.Atoi(part)
				if err != nil {
					return nil, fmt.Errorf("%s: bad index %q", p, part)
				}
				idx = append(idx, n)
			}
		}
		if name != "" {
			m, ok := v.(map[string]interface{})
			if !ok {
				return nil, fmt.Errorf("%s: %s is not under a map", p, name)
			}
			if v, ok = m[name]; !ok {
				return nil, fmt.Errorf("%s: no %s", p, name)
			}
		}
		for _, n := range idx {
			l, ok := v.([]interface{})
			if !ok || n < 0 || n >= len(l) {
				return nil, fmt.Errorf("%s: no element %d", p, n)
			}
			v = l[n]
		}
	}
	return v, nil
}
