package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fencecheck/fencecheck/internal/mdblock"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// docs/cli.md is written from the command tree by `go generate ./cmd/fencecheck` (the
// hidden gen-docs command); TestCLIDocIsCurrent fails when the file differs from what
// this code writes.

// docsEnv is the environment the page is written under, so that no path of the machine
// that wrote it (the kube-apiserver build cache under $HOME) gets into it.
var docsEnv = map[string]string{"FENCECHECK_CACHE": "~/.cache/fencecheck"}

func (a *app) genDocsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs FILE",
		Short:  "write docs/cli.md from the command tree",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			for k, v := range docsEnv {
				if err := os.Setenv(k, v); err != nil {
					return err
				}
			}
			var b bytes.Buffer
			writeCLIDoc(&b)
			return os.WriteFile(args[0], b.Bytes(), 0o644)
		},
	}
}

// writeCLIDoc writes the command-line reference of a fresh command tree.
func writeCLIDoc(w io.Writer) {
	var discard bytes.Buffer
	a := newApp(nil, &discard, &discard)
	root := a.root()
	root.InitDefaultCompletionCmd()
	cmds := commandTree(root)

	fmt.Fprint(w, `# fencecheck command line

<!-- Written by "go generate ./cmd/fencecheck" from the command tree in cmd/fencecheck;
     a test fails when it differs from what the code would write. Do not edit. -->

Every command takes its flags before or after its arguments, prints its help with `+"`-h`"+`,
and says what went wrong in one line on stderr (with a pointer to its help when the
command line itself was wrong). Secrets given to it (DSN passwords, the tokens of a
kubeconfig) are masked in everything it prints and writes. Shell completion of commands,
flags and backend, resource, fault and scenario names: `+"`fencecheck completion bash|zsh|fish`"+`.

## Exit codes

The same rule for every command:

| code | meaning |
|---|---|
`)
	for _, e := range exitCodesOf(root) {
		fmt.Fprintf(w, "| %s | %s |\n", e[0], cell(e[1]))
	}
	fmt.Fprint(w, `
When one command makes several runs (check of several files, matrix, evaluate, compare, soak), a
proven violation (1) wins over fencecheck's own failure (3), which wins over a run that
could not be made (2), which wins over a run that proved nothing (4). A run in which every
acquire failed is a setup error (2) naming the first error, not a verdict; a history, a
scorecard, a comparison or a soak whose runs lack the evidence (no operation, no grant, no
accepted write, the fault never struck, no stale write attempted: docs/checker.md,
"Evidence") is inconclusive (4), never safe (0). A matrix still compares each cell with its
expectation: a cell expected inconclusive that is inconclusive is as expected.

A matrix, evaluate or soak too long for one machine runs in shards: `+"`--shard I/N`"+` on each
of N machines runs every N-th run of the same plan into its own store, and `+"`fencecheck merge`"+`
combines the stores and recomputes the pages from the runs ([sharding.md](sharding.md)).

## JSON output

`+"`--json`"+` on the commands that judge (run, check, matrix, evaluate, compare, soak, merge) prints JSON on
stdout with the overall `+"`outcome`"+` and the `+"`exit`"+` code; progress and messages go to
stderr. A command that could not give a verdict prints `+"`{\"outcome\": \"error\", \"exit\": N, \"error\": \"...\"}`"+`.

| command | document | outcome |
|---|---|---|
| run | the verdicts (as check), the scenario, seed and run folder | safe, unsafe, inconclusive, unknown |
| check | one document per file per line | safe, unsafe, inconclusive, unknown |
| matrix | matrix.json's fields and the index page | as-expected, differs, incomplete |
| evaluate | scorecard.json's fields ([schema](scorecard.schema.json)) and the page | safe, unsafe, inconclusive, incomplete |
| compare | compare.json's fields ([schema](compare.schema.json)) and the page | complete, unsafe, inconclusive, incomplete |
| soak | the soak's result | as-expected, differs, inconclusive, incomplete |
| zoo | a row per entry (detected, control false alarms and held), the entries skipped here, the soak it was judged from | as-expected, differs, inconclusive, incomplete |
| explore | the tries, the findings with their schedule files, shrunk sizes and replay rates | found, nothing-found, incomplete |
| merge | per merged campaign: its plan, its shards and their stores, the missing shards, and the document of its own command | as-expected, differs, inconclusive, incomplete |
| doctor | one entry per backend and resource, and the apt-get line | ready, missing |

Each document has its JSON Schema: [run](run.schema.json), [check](check.schema.json),
[matrix](matrix.schema.json), [evaluate](scorecard.schema.json), [compare](compare.schema.json),
[soak](soak.schema.json), [zoo](zoo.schema.json), [explore](explore.schema.json), [merge](merge.schema.json), [doctor](doctor.schema.json). The error
document ([schema](error.schema.json)) is printed on one line instead of the command's
document whenever there is none to print: a flag or argument that cannot be parsed, a
missing file, a backend that cannot run here (exit 2), fencecheck's own failure (exit 3);
after check's lines it is the last line.

A run's outcome says what the history shows about the protected data: unsafe (register or
updates violated), unknown (the checker did not decide), inconclusive (nothing violated,
but the history lacks the evidence: `+"`why`"+` says which), safe. verdict.json in every run folder has the same
`+"`outcome`"+` ([schema](verdict.schema.json)).

## Commands

| command | what it does |
|---|---|
`)
	for _, c := range cmds[1:] {
		fmt.Fprintf(w, "| [%s](#%s) | %s |\n", c.Name(), anchor(c.CommandPath()), cell(c.Short))
	}
	for _, c := range cmds {
		writeCommandDoc(w, c)
	}
	writeOptionsDoc(w, a)
}

// writeOptionsDoc writes the one table of the registry's options, with who takes each.
func writeOptionsDoc(w io.Writer, a *app) {
	fmt.Fprint(w, `
## Backend and resource options

The commands that run backends (run, matrix, evaluate, soak, doctor) take one flag per
option a backend or resource declares. An option of another backend than the run's is an
error; one of another resource is ignored (a DSN given for a run that uses no database).
An option marked as a secret has its credentials masked in every output.

| flag | for | meaning |
|---|---|---|
`)
	for _, o := range a.reg.Options() {
		backends, resources := a.reg.OptionOwners(o.Name)
		var owners []string
		if len(backends) > 0 {
			owners = append(owners, "backends "+strings.Join(backends, ", "))
		}
		if len(resources) > 0 {
			owners = append(owners, "resources "+strings.Join(resources, ", "))
		}
		usage := o.Usage
		if o.Secret {
			usage += " (secret: masked in every output)"
		}
		if o.Env != "" && !strings.Contains(usage, "$"+o.Env) {
			usage += " (default $" + o.Env + ")"
		}
		fmt.Fprintf(w, "| `--%s string` | %s | %s |\n", o.Name, cell(strings.Join(owners, "; ")), cell(usage))
	}
}

// writeCommandDoc writes one command's section.
func writeCommandDoc(w io.Writer, c *cobra.Command) {
	fmt.Fprintf(w, "\n## %s\n\n%s.\n\n```\n%s\n```\n", c.CommandPath(), capitalize(c.Short), useLine(c))
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.Long))
	}
	if c.Example != "" {
		fmt.Fprintf(w, "\nExamples:\n\n```sh\n%s\n```\n", strings.TrimRight(exampleCommands(c.Example), "\n"))
	}
	own, options := flagGroups(c)
	if c.Name() == "completion" || c.HasParent() && c.Parent().Name() == "completion" {
		own = pflag.NewFlagSet("", pflag.ContinueOnError)
	}
	flagTable(w, "Flags", own)
	if options.HasFlags() {
		fmt.Fprint(w, "\nAnd every [backend and resource option](#backend-and-resource-options).\n")
	}
	if c.HasParent() {
		if codes := c.Annotations; len(codes) > 0 {
			if e := exitCodesOf(c); len(e) > 0 {
				fmt.Fprint(w, "\nExit codes:\n\n| code | meaning |\n|---|---|\n")
				for _, x := range e {
					fmt.Fprintf(w, "| %s | %s |\n", x[0], cell(x[1]))
				}
			}
		}
	}
}

// flagTable writes a table of flags.
func flagTable(w io.Writer, title string, fs *pflag.FlagSet) {
	if !fs.HasFlags() {
		return
	}
	fmt.Fprintf(w, "\n%s:\n\n| flag | default | meaning |\n|---|---|---|\n", title)
	fs.VisitAll(func(f *pflag.Flag) {
		typ, usage := pflag.UnquoteUsage(f)
		name := "`--" + f.Name
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, `--" + f.Name
		}
		if typ != "" {
			name += " " + typ
		}
		name += "`"
		def := ""
		if !zeroDefault(f) {
			def = "`" + f.DefValue + "`"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", name, def, cell(usage))
	})
}

// zeroDefault reports whether a flag's default is its type's zero (not worth a column).
func zeroDefault(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "[]", "0s":
		return true
	}
	return false
}

// exampleCommands drops the explanations aligned after the root's examples.
func exampleCommands(ex string) string {
	var out []string
	for _, l := range strings.Split(ex, "\n") {
		l = strings.TrimSpace(l)
		if i := strings.Index(l, "   "); i > 0 {
			l = strings.TrimSpace(l[:i]) + "   # " + strings.TrimSpace(l[i:])
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// anchor is GitHub's anchor of a heading.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// capitalize upper-cases the first letter.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// The saved comparison under docs/compare and the "Which lock?" table README.md carries.
const (
	compareDocDir  = "docs/compare"
	compareDocRel  = "docs/compare/"
	compareDocPage = "README.md"
)

// genWhichLockCmd writes docs/compare/compare.html and docs/compare/README.md from
// docs/compare/compare.json (a comparison copied there from a results store), and the
// "Which lock?" section of README.md from it.
func (a *app) genWhichLockCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-which-lock ROOT",
		Short:  "write docs/compare's pages and README.md's Which lock? table from docs/compare/compare.json",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			files, err := whichLockDocs(args[0])
			if err != nil {
				return err
			}
			for path, b := range files {
				if err := os.WriteFile(filepath.Join(args[0], filepath.FromSlash(path)), b, 0o644); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// whichLockDocs returns what docs/compare/compare.html, docs/compare/README.md and
// README.md under root should be (by path from root), from root's
// docs/compare/compare.json.
func whichLockDocs(root string) (map[string][]byte, error) {
	c, err := reports.ReadComparison(filepath.Join(root, filepath.FromSlash(compareDocDir), reports.CompareJSON))
	if err != nil {
		return nil, err
	}
	// Judged again from its runs: the words and paragraphs are what the code derives
	// today from the saved figures and facts.
	c.Judge()
	var b bytes.Buffer
	if err := reports.WriteComparisonPage(&b, c); err != nil {
		return nil, err
	}
	doc, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return nil, err
	}
	readme, err := mdblock.Set(doc, reports.WhichLockBlock, reports.WhichLock(c, compareDocRel))
	if err != nil {
		return nil, fmt.Errorf("README.md: %w", err)
	}
	return map[string][]byte{
		compareDocDir + "/" + reports.ComparePage: b.Bytes(),
		compareDocDir + "/" + compareDocPage:      []byte(reports.CompareMarkdown(c)),
		"README.md":                               readme,
	}, nil
}
