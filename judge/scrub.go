package judge

import (
	"path"
	"regexp"
	"strings"
)

// What Scrub takes out of the words a comparison shows: process ids and absolute paths
// (a run's raw error names its client's process and temporary folder), which say nothing
// about the lock and differ from machine to machine.
var (
	pidWords     = regexp.MustCompile(`(?i)\bpid[ =:]*\d+`)
	processWords = regexp.MustCompile(`(?i)\bprocess (\d+)\b`)
	absPath      = regexp.MustCompile(`(^|[\s"'(=\[])(/[^\s"'),\]]+)`)
)

// Scrub removes process ids and absolute paths from s (a path keeps its last element:
// "/tmp/fencecheck-1234/client.sock" is "client.sock"). Secrets are the redactor's
// (harness/redact); this is for what is not secret but no use on a page.
func Scrub(s string) string {
	if s == "" {
		return s
	}
	s = pidWords.ReplaceAllString(s, "a process")
	s = processWords.ReplaceAllString(s, "the process")
	return absPath.ReplaceAllStringFunc(s, func(m string) string {
		i := strings.IndexByte(m, '/')
		p := strings.TrimRight(m[i:], "/.:;")
		return m[:i] + path.Base(p) + m[i+len(p):]
	})
}

// article is "an" before a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
