// Package redact keeps credentials out of what fencecheck prints and writes. A Redactor
// knows the secret values of one invocation (the passwords in the DSNs it was given, the
// tokens in a kubeconfig) and masks them, together with anything that looks like a
// credential (a URL's password, password=... in a key=value DSN, a bearer token), in
// every string or writer it is asked to clean.
package redact

import (
	"bufio"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mask is what a secret is replaced with.
const Mask = "***"

// minSecret is the shortest value masked wherever it occurs: a shorter one would mask
// ordinary words; the patterns still mask it where it stands as a password.
const minSecret = 3

var (
	// scheme://user:password@ — the password runs to the last @ of the word, so that an
	// @ in it is masked too.
	urlPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*):(\S*)@`)
	// password=... in a libpq key=value string or a URL query (not token=: fencecheck logs
	// fencing tokens so).
	keyValue = regexp.MustCompile(`(?i)\b(password|passwd|pwd|sslpassword)(\s*=\s*)('[^']*'|"[^"]*"|[^\s&;,'"]+)`)
	// Authorization: Bearer ...
	bearer = regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{4,}`)
	// A MySQL DSN: user:password@tcp(host:port)/db.
	mysqlPassword = regexp.MustCompile(`(^|[\s"'=])([^\s:@/"'=]+):(\S*?)@(tcp|unix)\(`)
)

// Text masks what looks like a credential in s: a URL's password
// (postgres://app:***@host/db), password=*** pairs, bearer tokens and a
// MySQL DSN's password.
func Text(s string) string {
	if !strings.ContainsAny(s, ":=") && !strings.Contains(strings.ToLower(s), "bearer") {
		return s
	}
	s = replace(urlPassword, s, 2, "$1:"+Mask+"@")
	s = replace(mysqlPassword, s, 3, "$1$2:"+Mask+"@$4(")
	s = replace(keyValue, s, 3, "$1$2"+Mask)
	s = bearer.ReplaceAllString(s, "$1"+Mask)
	return s
}

// placeholders are the passwords of examples in fencecheck's own help and messages
// (postgres://user:password@host/db): left as they are.
var placeholders = []string{"password", "pass", "PASSWORD", Mask}

// replace masks re's matches in s, but those whose group g is a placeholder.
func replace(re *regexp.Regexp, s string, g int, repl string) string {
	return re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		if sub == nil || slices.Contains(placeholders, strings.Trim(sub[g], `'"`)) {
			return m
		}
		return re.ReplaceAllString(m, repl)
	})
}

// DSN returns a connection string with its password masked: postgres://app:***@host/db,
// host=h password=*** dbname=d, app:***@tcp(h:3306)/d.
func DSN(s string) string { return Text(s) }

// Secrets returns the secret parts of a value that may carry credentials: a URL's
// password (as written and decoded), a key=value string's password and a MySQL DSN's
// password.
func Secrets(value string) []string {
	var out []string
	add := func(s string) {
		s = strings.Trim(s, `'"`)
		if len(s) >= minSecret && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, m := range urlPassword.FindAllStringSubmatch(value, -1) {
		add(m[2])
		if dec, err := url.PathUnescape(m[2]); err == nil {
			add(dec)
		}
	}
	for _, m := range mysqlPassword.FindAllStringSubmatch(value, -1) {
		add(m[3])
	}
	for _, m := range keyValue.FindAllStringSubmatch(value, -1) {
		add(m[3])
		if dec, err := url.QueryUnescape(strings.Trim(m[3], `'"`)); err == nil {
			add(dec)
		}
	}
	return out
}

// fileKeys are the kubeconfig (YAML) keys whose values are credentials.
var fileKeys = regexp.MustCompile(`^\s*-?\s*"?(token|password|client-key-data|id-token|refresh-token|access-token|secret)"?\s*:\s*(.+?)\s*$`)

// FileSecrets reads a small YAML file (a kubeconfig) and returns its credential values:
// tokens, passwords and private keys.
func FileSecrets(path string) []string {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > 1<<20 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m := fileKeys.FindStringSubmatch(sc.Text()); m != nil {
			if v := strings.Trim(m[2], `'"`); len(v) >= minSecret {
				out = append(out, v)
			}
		}
	}
	return out
}

// Redactor masks one invocation's secret values and every credential pattern. The zero
// value masks patterns only. It is safe for concurrent use.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string // longest first, so that a secret containing another is masked whole
}

// New returns a Redactor that masks the secret parts of values (see Secrets).
func New(values ...string) *Redactor {
	r := &Redactor{}
	r.Add(values...)
	return r
}

// Add registers more values that may carry credentials.
func (r *Redactor) Add(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		for _, s := range Secrets(v) {
			if !slices.Contains(r.secrets, s) {
				r.secrets = append(r.secrets, s)
			}
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
}

// AddFile registers the credentials in a file (see FileSecrets).
func (r *Redactor) AddFile(path string) { r.AddSecret(FileSecrets(path)...) }

// AddSecret registers a value that is a secret as a whole (a password, a token).
func (r *Redactor) AddSecret(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range values {
		if len(s) >= minSecret && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
}

// String masks r's secrets and every credential pattern in s.
func (r *Redactor) String(s string) string {
	if r != nil {
		r.mu.RLock()
		for _, sec := range r.secrets {
			s = strings.ReplaceAll(s, sec, Mask)
		}
		r.mu.RUnlock()
	}
	return Text(s)
}

// Error returns err with its message masked (nil for nil). errors.Is and errors.As still
// see the original chain.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := r.String(err.Error())
	if msg == err.Error() {
		return err
	}
	return maskedError{msg: msg, err: err}
}

type maskedError struct {
	msg string
	err error
}

func (e maskedError) Error() string { return e.msg }
func (e maskedError) Unwrap() error { return e.err }

// Writer returns a writer that masks every Write before passing it on to w. Each Write
// is masked on its own: a secret split over two writes is not seen, so callers write
// whole lines (fmt.Fprintf, slog handlers and json.Encoder do).
func (r *Redactor) Writer(w io.Writer) io.Writer { return &writer{r: r, w: w} }

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	s := string(p)
	m := w.r.String(s)
	if m == s {
		return w.w.Write(p)
	}
	if _, err := io.WriteString(w.w, m); err != nil {
		return 0, err
	}
	return len(p), nil
}
