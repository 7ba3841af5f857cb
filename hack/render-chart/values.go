package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	yaml "gopkg.in/yaml.v3"
)

// Values is a chart's value tree: maps are map[string]interface{}, lists []interface{}.
type Values = map[string]interface{}

// readValuesFile parses a YAML values file; an empty file is an empty tree.
func readValuesFile(path string) (Values, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v := Values{}
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if v == nil {
		v = Values{}
	}
	return jsonNumbers(v).(Values), nil
}

// jsonNumbers turns integers into float64, as Helm's values files are read (YAML through JSON),
// so that a chart comparing numbers with eq or printing them behaves here as under Helm.
func jsonNumbers(v interface{}) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		for k, e := range x {
			x[k] = jsonNumbers(e)
		}
	case []interface{}:
		for i, e := range x {
			x[i] = jsonNumbers(e)
		}
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return v
}

// mergeValues deep-merges src into dst (src wins), as Helm coalesces -f files: maps merge key
// by key, everything else is replaced, and a null in src deletes the key.
func mergeValues(dst, src Values) Values {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		sm, sIsMap := sv.(map[string]interface{})
		dm, dIsMap := dst[k].(map[string]interface{})
		if sIsMap && dIsMap {
			dst[k] = mergeValues(dm, sm)
			continue
		}
		dst[k] = sv
	}
	return dst
}

// applySet applies one --set (or --set-string when asString) argument: a comma-separated list
// of dotted.key=value pairs; a value {a,b} is a list. Values other than --set-string are typed
// like Helm's: true/false, null (deletes), integers; everything else is a string.
func applySet(vals Values, arg string, asString bool) error {
	for _, pair := range splitTopLevel(arg, ',') {
		eq := strings.IndexByte(pair, '=')
		if eq <= 0 {
			return fmt.Errorf("--set %q: want key=value", pair)
		}
		key, raw := pair[:eq], pair[eq+1:]
		var value interface{}
		if strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}") {
			list := []interface{}{}
			if inner := raw[1 : len(raw)-1]; inner != "" {
				for _, item := range strings.Split(inner, ",") {
					list = append(list, typedValue(item, asString))
				}
			}
			value = list
		} else {
			value = typedValue(raw, asString)
		}
		if err := setPath(vals, strings.Split(key, "."), value); err != nil {
			return fmt.Errorf("--set %s: %v", key, err)
		}
	}
	return nil
}

func typedValue(raw string, asString bool) interface{} {
	if asString {
		return raw
	}
	switch raw {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if n, err := strconv.ParseInt(raw, 10, 64); err == nil && (raw == "0" || raw[0] != '0') {
		return n
	}
	return raw
}

func setPath(vals Values, path []string, value interface{}) error {
	for i, seg := range path {
		if seg == "" {
			return fmt.Errorf("empty key segment")
		}
		if i == len(path)-1 {
			if value == nil {
				delete(vals, seg)
			} else {
				vals[seg] = value
			}
			return nil
		}
		next, ok := vals[seg].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			vals[seg] = next
		}
		vals = next
	}
	return nil
}

// splitTopLevel splits s on sep outside {...}.
func splitTopLevel(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
		case sep:
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
