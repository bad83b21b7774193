// Command gen rewrites the docs that list the properties (propdocs.Files) under -root.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/fencecheck/fencecheck/models/internal/propdocs"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	if err := propdocs.Write(*root); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
