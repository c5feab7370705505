// helm_render renders a Helm chart the way `helm template` does, for tests on machines
// without Helm: Go text/template with the sprig functions plus Helm's own include, tpl,
// required, toYaml, fromYaml and fail; values.yaml deep-merged with -f files in order;
// .Release, .Chart, .Values, .Template and a minimal .Capabilities. Every rendered manifest is
// printed as a YAML document headed by `# Source: <chart>/templates/<file>`.
//
// Values have Helm's types: Helm reads YAML by converting it to JSON and decoding that, so
// every number in the values is a float64 (`toString 67108864` gives "6.7108864e+07", and
// `{{ .Values.n }}` prints it so), and toYaml/fromYaml go through JSON the same way.
//
// Usage: helm_render -chart DIR [-f values.yaml]... [-name RELEASE] [-namespace NS]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	yaml2 "gopkg.in/yaml.v2"
	yaml3 "gopkg.in/yaml.v3"
)

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

func readYAML(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]interface{}{}
	if err := yaml3.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if out == nil {
		out = map[string]interface{}{}
	}
	return out, nil
}

// helmTypes gives `v` the types Helm's YAML reading gives it (YAML to JSON, then JSON decoded):
// numbers float64, maps map[string]interface{}.
func helmTypes(v map[string]interface{}) (map[string]interface{}, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]interface{}{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// readValues reads a values file as Helm does.
func readValues(path string) (map[string]interface{}, error) {
	raw, err := readYAML(path)
	if err != nil {
		return nil, err
	}
	out, err := helmTypes(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return out, nil
}

// merge deep-merges src into dst (src wins; maps merge; a null in src deletes the key).
func merge(dst, src map[string]interface{}) map[string]interface{} {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		if sm, ok := v.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				dst[k] = merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// toYAML is Helm's toYaml: JSON first, then that JSON written as YAML (so a whole float64
// prints as an integer, as in Helm).
func toYAML(v interface{}) string {
	j, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var doc interface{}
	if err := yaml2.Unmarshal(j, &doc); err != nil {
		return ""
	}
	data, err := yaml2.Marshal(doc)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(s string) map[string]interface{} {
	out := map[string]interface{}{}
	if err := yaml3.Unmarshal([]byte(s), &out); err != nil {
		out["Error"] = err.Error()
		return out
	}
	typed, err := helmTypes(out)
	if err != nil {
		return map[string]interface{}{"Error": err.Error()}
	}
	return typed
}

func main() {
	chartDir := flag.String("chart", "", "chart directory")
	name := flag.String("name", "release", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	var valueFiles fileList
	flag.Var(&valueFiles, "f", "values file (repeatable)")
	flag.Parse()
	if err := run(*chartDir, *name, *namespace, valueFiles); err != nil {
		fmt.Fprintln(os.Stderr, "helm_render:", err)
		os.Exit(1)
	}
}

func run(chartDir, name, namespace string, valueFiles []string) error {
	chartMeta, err := readYAML(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return err
	}
	values, err := readValues(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	for _, f := range valueFiles {
		override, err := readValues(f)
		if err != nil {
			return err
		}
		values = merge(values, override)
	}
	chart := map[string]interface{}{}
	for k, v := range chartMeta {
		chart[strings.ToUpper(k[:1])+k[1:]] = v
	}
	chartName, _ := chart["Name"].(string)

	paths, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil {
		return err
	}
	sort.Strings(paths)

	root := template.New("chart")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = fromYAML
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, fmt.Errorf("%s", msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	funcs["fail"] = func(msg string) (string, error) { return "", fmt.Errorf("%s", msg) }
	funcs["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := root.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		err = t.Execute(&buf, data)
		return strings.ReplaceAll(buf.String(), "<no value>", ""), err
	}
	root.Funcs(funcs).Option("missingkey=zero")

	var rendered []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := root.New(filepath.Base(p)).Parse(string(data)); err != nil {
			return err
		}
		rendered = append(rendered, filepath.Base(p))
	}

	var out bytes.Buffer
	for _, base := range rendered {
		if strings.HasPrefix(base, "_") || !(strings.HasSuffix(base, ".yaml") ||
			strings.HasSuffix(base, ".yml") || strings.HasSuffix(base, ".tpl")) {
			continue
		}
		if strings.HasSuffix(base, ".tpl") {
			continue
		}
		top := map[string]interface{}{
			"Values": values,
			"Chart":  chart,
			"Release": map[string]interface{}{
				"Name": name, "Namespace": namespace, "Service": "Helm",
				"IsInstall": true, "IsUpgrade": false, "Revision": 1,
			},
			"Template": map[string]interface{}{
				"Name":     chartName + "/templates/" + base,
				"BasePath": chartName + "/templates",
			},
			"Capabilities": map[string]interface{}{
				"KubeVersion": map[string]interface{}{"Version": "v1.29.0", "Major": "1", "Minor": "29"},
			},
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, base, top); err != nil {
			return err
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		for _, doc := range strings.Split(text, "\n---") {
			if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
				continue
			}
			fmt.Fprintf(&out, "---\n# Source: %s/templates/%s\n%s\n", chartName, base,
				strings.TrimSpace(strings.TrimPrefix(doc, "---")))
		}
	}
	_, err = os.Stdout.Write(out.Bytes())
	return err
}
