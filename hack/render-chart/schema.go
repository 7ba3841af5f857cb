package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

// validateSchema checks values against the chart's values.schema.json, as Helm does before
// rendering. It supports the draft-07 subset charts use: type (one or a list), enum,
// minimum/maximum, minLength, required, properties, additionalProperties (bool or schema) and
// items. Returns one line per violation, naming the value's path; nil when the file is absent.
func validateSchema(schemaPath string, vals Values) ([]string, error) {
	data, err := os.ReadFile(schemaPath)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var schema map[string]interface{}
	if err := json.Unmarshal(data, &schema); err != nil {
		return nil, fmt.Errorf("%s: %v", schemaPath, err)
	}
	return checkNode("", vals, schema), nil
}

func jsonType(v interface{}) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int, int64, uint64:
		return "integer"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case map[string]interface{}:
		return "object"
	case []interface{}:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

func toFloat(v interface{}) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func name(at string) string {
	if at == "" {
		return "(root)"
	}
	return strings.TrimPrefix(at, ".")
}

func checkNode(at string, v interface{}, s map[string]interface{}) []string {
	if t, ok := s["type"]; ok {
		var allowed []string
		switch x := t.(type) {
		case string:
			allowed = []string{x}
		case []interface{}:
			for _, e := range x {
				allowed = append(allowed, fmt.Sprint(e))
			}
		}
		got, match := jsonType(v), false
		for _, a := range allowed {
			match = match || a == got || (a == "number" && got == "integer")
		}
		if !match {
			return []string{fmt.Sprintf("%s: invalid type: want %s, got %s", name(at),
				strings.Join(allowed, " or "), got)}
		}
	}
	var out []string
	if enum, ok := s["enum"].([]interface{}); ok {
		found := false
		for _, e := range enum {
			found = found || fmt.Sprint(e) == fmt.Sprint(v)
		}
		if !found {
			out = append(out, fmt.Sprintf("%s: must be one of %v, got %v", name(at), enum, v))
		}
	}
	if f, ok := toFloat(v); ok {
		if lo, ok := s["minimum"].(float64); ok && f < lo {
			out = append(out, fmt.Sprintf("%s: must be >= %v, got %v", name(at), lo, v))
		}
		if hi, ok := s["maximum"].(float64); ok && f > hi {
			out = append(out, fmt.Sprintf("%s: must be <= %v, got %v", name(at), hi, v))
		}
	}
	if str, ok := v.(string); ok {
		if n, ok := s["minLength"].(float64); ok && float64(len(str)) < n {
			out = append(out, fmt.Sprintf("%s: must have at least %v characters", name(at), n))
		}
	}
	if m, ok := v.(map[string]interface{}); ok {
		out = append(out, checkObject(at, m, s)...)
	}
	if l, ok := v.([]interface{}); ok {
		if items, ok := s["items"].(map[string]interface{}); ok {
			for i, e := range l {
				out = append(out, checkNode(fmt.Sprintf("%s[%d]", at, i), e, items)...)
			}
		}
	}
	return out
}

func checkObject(at string, m map[string]interface{}, s map[string]interface{}) []string {
	var out []string
	if req, ok := s["required"].([]interface{}); ok {
		for _, r := range req {
			if _, ok := m[fmt.Sprint(r)]; !ok {
				out = append(out, fmt.Sprintf("%s.%v: required", name(at), r))
			}
		}
	}
	props, _ := s["properties"].(map[string]interface{})
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ps, ok := props[k].(map[string]interface{}); ok {
			out = append(out, checkNode(at+"."+k, m[k], ps)...)
			continue
		}
		switch extra := s["additionalProperties"].(type) {
		case bool:
			if !extra {
				out = append(out, fmt.Sprintf("%s: unknown value (not in values.schema.json)",
					name(at+"."+k)))
			}
		case map[string]interface{}:
			out = append(out, checkNode(at+"."+k, m[k], extra)...)
		}
	}
	return out
}
