package main

import (
	"os"
	"strings"

	"github.com/fencecheck/fencecheck/harness/redact"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// secrets is the masker of one invocation. It knows, before any flag is parsed (so that
// even a parse error cannot print one), the credentials in:
//   - the value of every secret flag: a registry option marked Secret, any --*-dsn, and
//     --kubeconfig (the tokens and passwords in the file it names);
//   - every *_DSN environment variable, the environment variable of a secret option,
//     and the file $KUBECONFIG names;
//   - every argument that looks like a DSN with a password.
func secrets(reg *registry.Registry, args []string) *redact.Redactor {
	red := redact.New()
	secretEnv := map[string]bool{"KUBECONFIG": true}
	for _, o := range reg.Options() {
		if o.Secret && o.Env != "" {
			secretEnv[o.Env] = true
		}
	}
	for _, kv := range os.Environ() {
		name, v, _ := strings.Cut(kv, "=")
		if secretEnv[name] || strings.HasSuffix(name, "_DSN") {
			addSecretValue(red, v)
		}
	}
	for i, arg := range args {
		red.Add(arg)
		name, v, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !strings.HasPrefix(arg, "--") || !secretFlag(reg, name) {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				continue
			}
			v = args[i+1]
		}
		addSecretValue(red, v)
	}
	return red
}

// addSecretValue registers a secret flag's or variable's value: the credentials in it,
// or in the file it names (a kubeconfig).
func addSecretValue(red *redact.Redactor, v string) {
	red.Add(v)
	if st, err := os.Stat(v); err == nil && st.Mode().IsRegular() {
		red.AddFile(v)
	}
}

// secretFlag reports whether a flag's value carries credentials.
func secretFlag(reg *registry.Registry, name string) bool {
	if o, ok := reg.Option(name); ok && o.Secret {
		return true
	}
	return strings.HasSuffix(name, "-dsn") || name == "kubeconfig"
}
