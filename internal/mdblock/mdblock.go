// Package mdblock replaces the generated blocks of a hand-written Markdown file: the
// lines between "<!-- generated: NAME -->" and "<!-- end generated: NAME -->" belong
// to a generator, everything around them to the file's author.
package mdblock

import (
	"bytes"
	"fmt"
)

func markers(name string) (begin, end []byte) {
	return []byte("<!-- generated: " + name + " -->\n"), []byte("<!-- end generated: " + name + " -->")
}

// Get returns the content of block name in doc (without its marker lines).
func Get(doc []byte, name string) (string, error) {
	i, j, err := find(doc, name)
	if err != nil {
		return "", err
	}
	return string(doc[i:j]), nil
}

// Set returns doc with the content of block name replaced by content (a trailing
// newline is added when missing).
func Set(doc []byte, name, content string) ([]byte, error) {
	i, j, err := find(doc, name)
	if err != nil {
		return nil, err
	}
	if content != "" && content[len(content)-1] != '\n' {
		content += "\n"
	}
	out := make([]byte, 0, len(doc)-(j-i)+len(content))
	out = append(out, doc[:i]...)
	out = append(out, content...)
	return append(out, doc[j:]...), nil
}

// find locates block name's content: doc[i:j], between the end of the begin marker's
// line and the start of the end marker.
func find(doc []byte, name string) (i, j int, err error) {
	begin, end := markers(name)
	b := bytes.Index(doc, begin)
	if b < 0 {
		return 0, 0, fmt.Errorf("no line %q", bytes.TrimSpace(begin))
	}
	i = b + len(begin)
	e := bytes.Index(doc[i:], end)
	if e < 0 {
		return 0, 0, fmt.Errorf("no line %q after %q", end, bytes.TrimSpace(begin))
	}
	if bytes.Contains(doc[e+i+len(end):], begin) {
		return 0, 0, fmt.Errorf("block %q appears twice", name)
	}
	return i, i + e, nil
}
