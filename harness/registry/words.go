package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Refusals are said to the CLI's user in plain words (what the backend, the resource or
// the fault cannot do here); the author of a backend in Go also wants the interface or
// descriptor field that would change it. A refusal carries that name beside its words:
// Error() is the words, GoNames finds the names, and the fencecheck package's front
// adds them to its errors (WithGoNames).

// goNamed is a refusal in words, with the Go names that would lift it.
type goNamed struct {
	err   error
	names []string
}

func (e *goNamed) Error() string { return e.err.Error() }
func (e *goNamed) Unwrap() error { return e.err }

// Refuse is the error fmt.Errorf(format, args...) would be, carrying goName (e.g.
// "harness.Cluster", "registry.Backend.MultiMember") for the Go user: the CLI prints
// the words only.
func Refuse(goName, format string, args ...any) error {
	return &goNamed{err: fmt.Errorf(format, args...), names: []string{goName}}
}

// GoNames lists the Go names the refusals in err's chain carry, each once.
func GoNames(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if g, ok := e.(*goNamed); ok {
			for _, n := range g.names {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}

// withGo is an error whose text ends with the Go names of its refusals.
type withGo struct {
	err   error
	names []string
}

func (e *withGo) Error() string {
	return e.err.Error() + " (in Go: " + strings.Join(e.names, ", ") + ")"
}
func (e *withGo) Unwrap() error { return e.err }

// WithGoNames is err with the Go names of its refusals added to its text (errors.Is and
// errors.As see through it); err itself when it carries none. For the errors a Go API
// returns to the author of a backend.
func WithGoNames(err error) error {
	names := GoNames(err)
	var already *withGo
	if len(names) == 0 || errors.As(err, &already) {
		return err
	}
	return &withGo{err: err, names: names}
}

// CarryGoNames is err carrying the Go names of from's refusals: for an error that
// restates another's words in its own.
func CarryGoNames(err, from error) error {
	names := GoNames(from)
	if err == nil || len(names) == 0 {
		return err
	}
	return &goNamed{err: err, names: names}
}
