// Command gendocs writes the pages builtin generates (builtin.Pages, and the zoo's page
// from its saved run: builtin.ZooPage) under the repository's root, and the generated blocks of hand-written pages (builtin.Blocks);
// `go generate ./builtin` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/internal/mdblock"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	pages, err := builtin.Pages()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
	paths := make([]string, 0, len(pages))
	for p := range pages {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		full := filepath.Join(*root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "gendocs:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(full, pages[p], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gendocs:", err)
			os.Exit(1)
		}
	}
	saved, err := os.ReadFile(filepath.Join(*root, filepath.FromSlash(builtin.ZooRunPath)))
	if err != nil {
		saved = nil // no saved run yet: every entry "not run"
	}
	zoo, err := builtin.ZooPage(saved)
	if err == nil {
		err = os.WriteFile(filepath.Join(*root, filepath.FromSlash(builtin.ZooPagePath)), zoo, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
	for file, blocks := range builtin.Blocks() {
		full := filepath.Join(*root, filepath.FromSlash(file))
		doc, err := os.ReadFile(full)
		for name, content := range blocks {
			if err == nil {
				doc, err = mdblock.Set(doc, name, content)
			}
		}
		if err == nil {
			err = os.WriteFile(full, doc, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gendocs:", file+":", err)
			os.Exit(1)
		}
	}
}
