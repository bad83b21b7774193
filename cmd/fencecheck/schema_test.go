package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The JSON Schemas in docs/ are checked against what fencecheck really writes, with a
// validator of the part of JSON Schema they use (a keyword it does not know fails the
// test, so a schema cannot silently say more than is checked).

// schemaDoc is one schema file; a $ref may point into another file of the same folder
// ("scorecard.schema.json", "verdict.schema.json#/$defs/evidence"), read once.
type schemaDoc struct {
	root  map[string]any
	name  string
	files *schemaFiles
}

// schemaFiles are the schema files of one folder, by name.
type schemaFiles struct {
	dir string
	mu  sync.Mutex
	got map[string]map[string]any
}

func (f *schemaFiles) load(name string) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if root, ok := f.got[name]; ok {
		return root, nil
	}
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		return nil, err
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f.got[name] = root
	return root, nil
}

func loadSchema(t *testing.T, path string) schemaDoc {
	t.Helper()
	files := &schemaFiles{dir: filepath.Dir(path), got: map[string]map[string]any{}}
	root, err := files.load(filepath.Base(path))
	require.NoError(t, err)
	return schemaDoc{root: root, name: filepath.Base(path), files: files}
}

// validate returns every place where doc breaks the schema.
func (s schemaDoc) validate(doc any) []string {
	var errs []string
	s.check(s.root, doc, "$", &errs)
	return errs
}

// resolve finds a $ref: "#/json/pointer" in this file, "file.json" or
// "file.json#/json/pointer" in another of the folder.
func (s schemaDoc) resolve(ref string) (schemaDoc, map[string]any, error) {
	file, pointer, _ := strings.Cut(ref, "#")
	doc := s
	if file != "" && file != s.name {
		if strings.ContainsAny(file, "/:") {
			return s, nil, fmt.Errorf("only files of the same folder: %s", ref)
		}
		root, err := s.files.load(file)
		if err != nil {
			return s, nil, err
		}
		doc = schemaDoc{root: root, name: file, files: s.files}
	}
	var at any = doc.root
	if pointer != "" {
		for _, seg := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
			obj, ok := at.(map[string]any)
			if !ok {
				return s, nil, fmt.Errorf("unresolved")
			}
			if at, ok = obj[strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)]; !ok {
				return s, nil, fmt.Errorf("unresolved")
			}
		}
	}
	sch, ok := at.(map[string]any)
	if !ok {
		return s, nil, fmt.Errorf("not a schema")
	}
	return doc, sch, nil
}

var annotationKeywords = []string{"$schema", "$id", "$defs", "title", "description", "format"}

func (s schemaDoc) check(sch map[string]any, v any, at string, errs *[]string) {
	fail := func(format string, args ...any) { *errs = append(*errs, at+": "+fmt.Sprintf(format, args...)) }
	keys := make([]string, 0, len(sch))
	for k := range sch {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := sch[k]
		switch k {
		case "$ref":
			ref := want.(string)
			doc, def, err := s.resolve(ref)
			if err != nil {
				fail("$ref %s: %v", ref, err)
				continue
			}
			doc.check(def, v, at, errs)
		case "oneOf":
			// Exactly one alternative matches; when none does, the errors of the one
			// nearest to matching say why.
			var matched []int
			var nearest []string
			for i, alt := range want.([]any) {
				var altErrs []string
				s.check(alt.(map[string]any), v, at, &altErrs)
				if len(altErrs) == 0 {
					matched = append(matched, i)
				} else if nearest == nil || len(altErrs) < len(nearest) {
					nearest = altErrs
				}
			}
			switch {
			case len(matched) == 0:
				fail("matches none of oneOf; nearest: %s", strings.Join(nearest, "; "))
			case len(matched) > 1:
				fail("matches oneOf's alternatives %v, not exactly one", matched)
			}
		case "type":
			var types []string
			switch w := want.(type) {
			case string:
				types = []string{w}
			case []any:
				for _, x := range w {
					types = append(types, x.(string))
				}
			}
			if !slices.Contains(types, jsonType(v)) && !(jsonType(v) == "integer" && slices.Contains(types, "number")) {
				fail("type %s, want %v", jsonType(v), types)
			}
		case "const":
			if !reflect.DeepEqual(v, want) {
				fail("%v, want %v", v, want)
			}
		case "enum":
			if !slices.ContainsFunc(want.([]any), func(x any) bool { return reflect.DeepEqual(x, v) }) {
				fail("%v is not one of %v", v, want)
			}
		case "minimum":
			if n, ok := v.(float64); ok && n < want.(float64) {
				fail("%v below the minimum %v", n, want)
			}
		case "maximum":
			if n, ok := v.(float64); ok && n > want.(float64) {
				fail("%v above the maximum %v", n, want)
			}
		case "minLength":
			if str, ok := v.(string); ok && float64(len([]rune(str))) < want.(float64) {
				fail("%q shorter than %v", str, want)
			}
		case "required":
			if obj, ok := v.(map[string]any); ok {
				for _, r := range want.([]any) {
					if _, ok := obj[r.(string)]; !ok {
						fail("missing required %q", r)
					}
				}
			}
		case "properties", "additionalProperties", "propertyNames":
			obj, ok := v.(map[string]any)
			if !ok || k != "properties" {
				continue // checked with properties, below
			}
			props := want.(map[string]any)
			names := make([]string, 0, len(obj))
			for name := range obj {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				if pn, ok := sch["propertyNames"].(map[string]any); ok {
					s.check(pn, name, at+"."+name+" (name)", errs)
				}
				if p, ok := props[name]; ok {
					s.check(p.(map[string]any), obj[name], at+"."+name, errs)
					continue
				}
				switch ap := sch["additionalProperties"].(type) {
				case bool:
					if !ap {
						fail("unexpected property %q", name)
					}
				case map[string]any:
					s.check(ap, obj[name], at+"."+name, errs)
				}
			}
		case "items":
			if arr, ok := v.([]any); ok {
				for i, x := range arr {
					s.check(want.(map[string]any), x, fmt.Sprintf("%s[%d]", at, i), errs)
				}
			}
		default:
			if !slices.Contains(annotationKeywords, k) {
				fail("schema keyword %q is not supported by this validator", k)
			}
		}
	}
	// An object schema without "properties" still checks its additionalProperties and
	// propertyNames.
	if _, ok := sch["properties"]; !ok {
		if obj, ok := v.(map[string]any); ok {
			for name, x := range obj {
				if pn, ok := sch["propertyNames"].(map[string]any); ok {
					s.check(pn, name, at+"."+name+" (name)", errs)
				}
				if ap, ok := sch["additionalProperties"].(map[string]any); ok {
					s.check(ap, x, at+"."+name, errs)
				} else if ap, ok := sch["additionalProperties"].(bool); ok && !ap {
					fail("unexpected property %q", name)
				}
			}
		}
	}
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func readJSON(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(b, &v), path)
	return v
}

// The validator fails what breaks a schema (so that passing means something).
func TestSchemaValidatorFails(t *testing.T) {
	s := loadSchema(t, "../../docs/verdict.schema.json")
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"missing", `{"format": "fencecheck.verdict/v1"}`, `missing required "outcome"`},
		{"const", `{"format": "fencecheck.verdict/v2"}`, "fencecheck.verdict/v2, want fencecheck.verdict/v1"},
		{"enum", `{"outcome": "fine"}`, "fine is not one of"},
		{"extra", `{"surprise": 1}`, `unexpected property "surprise"`},
		{"name", `{"verdicts": {"speed": "held"}}`, "$.verdicts.speed (name): speed is not one of"},
		{"nested type", `{"evidence": {"writes": "many"}}`, "$.evidence.writes: type string, want [integer]"},
		{"minimum", `{"evidence": {"writes": -1}}`, "below the minimum"},
		{"items", `{"results": [{"property": "register", "verdict": "maybe"}]}`, "$.results[0].verdict: maybe is not one of"},
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(tc.doc), &v))
		errs := s.validate(v)
		require.NotEmpty(t, errs, tc.name)
		require.Contains(t, strings.Join(errs, "\n"), tc.want, tc.name)
	}
	// The keywords of the --json documents' schemas: a $ref into another file, oneOf,
	// maximum, minLength.
	for _, tc := range []struct {
		schema, doc, want string
	}{
		{"check.schema.json", `{"evidence": {"writes": -1}}`, "$.evidence.writes: -1 below the minimum"},
		{"check.schema.json", `{"exit": 5}`, "$.exit: 5 above the maximum 4"},
		{"error.schema.json", `{"outcome": "error", "exit": 2, "error": ""}`, `$.error: "" shorter than 1`},
		{"merge.schema.json", `{"campaigns": [{"result": {"outcome": "as-expected"}}]}`, "$.campaigns[0].result: matches none of oneOf; nearest: "},
		{"merge.schema.json", `{"campaigns": [{"result": {"runs": 1, "random": false, "scenarios": [], "outcome": "fine"}}]}`, "nearest: $.campaigns[0].result.outcome: fine is not one of"},
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(tc.doc), &v))
		errs := loadSchema(t, filepath.Join("../../docs", tc.schema)).validate(v)
		require.Contains(t, strings.Join(errs, "\n"), tc.want, "%s %s", tc.schema, tc.doc)
	}
}

// verdict.json of real runs (with and without side effects), `check --json`'s verdicts
// and a real scorecard.json match their schemas.
func TestSchemasMatchOutputs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs three scenarios and an evaluation")
	}
	verdict := loadSchema(t, "../../docs/verdict.schema.json")
	scorecard := loadSchema(t, "../../docs/scorecard.schema.json")
	out := t.TempDir()
	for _, args := range [][]string{
		{"run", "naive-unfenced-pause"},
		{"run", "--resource", "sqlite-direct", "--fault", "pause"},
		{"run", "naive-fenced-pause"},
	} {
		code, stdout, stderr := run(t, append(args, "--out", out)...)
		require.Contains(t, []int{exitSafe, exitViolated}, code, "%v\nstdout:\n%s\nstderr:\n%s", args, stdout, stderr)
	}
	files, err := filepath.Glob(filepath.Join(out, "*", "2*", "verdict.json"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	sawEffects := false
	for _, f := range files {
		doc := readJSON(t, f)
		require.Empty(t, verdict.validate(doc), f)
		_, has := doc.(map[string]any)["effects"]
		sawEffects = sawEffects || has
	}
	require.True(t, sawEffects, "the sqlite-direct run records side effects")

	code, stdout, stderr := run(t, "evaluate", "--backend", "naive", "--fault", "pause", "--out", out, "--json")
	require.Equal(t, exitSafe, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	cards, err := filepath.Glob(filepath.Join(out, "evaluate-naive", "2*", "scorecard.json"))
	require.NoError(t, err)
	require.Len(t, cards, 1)
	require.Empty(t, scorecard.validate(readJSON(t, cards[0])))
	// evaluate --json is the scorecard and its outcome, exit code and page.
	var printed map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &printed))
	require.Equal(t, "safe", printed["outcome"])
	require.Equal(t, float64(exitSafe), printed["exit"])
	require.FileExists(t, printed["page"].(string))
	require.Empty(t, scorecard.validate(printed))
}
