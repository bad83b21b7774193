// Package term makes text that comes from a file (a history, a results store, a spec)
// safe to print on a terminal: a terminal acts on control characters instead of
// showing them, so a history's scenario holding "\x1b]0;pwned\x07" would set the
// window's title, and one holding "\r\nresult: safe" would print a line fencecheck
// never wrote.
package term

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text returns s with every rune a terminal could act on escaped as in a Go or JSON
// string literal (\n, \r, \t, \u001b, \u0085, \u202e), and each byte that is not UTF-8
// as \xff: C0 controls and DEL, C1 controls, line and paragraph separators, and format
// characters (bidirectional overrides, zero-width characters). Everything else, other
// scripts included, is left as it is. One line of text from a file stays one line.
func Text(s string) string { return escape(s, false) }

// unsafe reports whether a terminal could act on r; layout (kept by Writer) is the
// newline and the tab.
func unsafe(r rune) bool {
	return r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0 || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r)
}

func escape(s string, keepLayout bool) string {
	clean := true
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 || unsafe(r) && !(keepLayout && (r == '\n' || r == '\t')) {
			clean = false
			break
		}
		i += w
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLayout && (r == '\n' || r == '\t'), !unsafe(r):
			b.WriteString(s[i : i+w])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += w
	}
	return b.String()
}

// Fprintf is fmt.Fprintf with every string, error and fmt.Stringer argument passed
// through Text: the format's own newlines and tabs stay, the arguments' are escaped.
// (Not for %q, which escapes on its own.)
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	return fmt.Fprintf(w, format, Args(args...)...)
}

// Sprintf is Fprintf to a string.
func Sprintf(format string, args ...any) string { return fmt.Sprintf(format, Args(args...)...) }

// Args returns args with every string (of any string type), error and fmt.Stringer
// passed through Text.
func Args(args ...any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = Text(v)
		case error:
			out[i] = Text(v.Error())
		case fmt.Stringer:
			out[i] = Text(v.String())
		default:
			if rv := reflect.ValueOf(a); rv.Kind() == reflect.String { // history.Kind, models.Property
				out[i] = Text(rv.String())
			} else {
				out[i] = a
			}
		}
	}
	return out
}

// Writer returns a writer that passes every Write on to w with the runes Text escapes
// escaped, but for the newline and the tab: a net under everything a command prints,
// so that no control character reaches the terminal even from a field no one thought
// to escape. Its escapes are valid in a JSON string, so a JSON document stays valid
// (and means the same). Each Write is escaped on its own: callers write whole strings.
func Writer(w io.Writer) io.Writer { return &writer{w} }

type writer struct{ w io.Writer }

func (w *writer) Write(p []byte) (int, error) {
	s := string(p)
	e := escape(s, true)
	if e == s {
		return w.w.Write(p)
	}
	if _, err := io.WriteString(w.w, e); err != nil {
		return 0, err
	}
	return len(p), nil
}
