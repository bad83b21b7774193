// Package dbauth says, for the database backends and resources, that a server answered
// and refused the user's credentials — not that no server answers — in one line that
// names the server and the user, never the password.
package dbauth

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrRefused matches (errors.Is) a server's refusal of the credentials.
var ErrRefused = errors.New("the server refused the credentials")

// refusal is a server's refusal of user at addr; its cause stays in the chain.
type refusal struct {
	service, addr, user, says string
	cause                     error
}

func (e *refusal) Error() string {
	s := fmt.Sprintf("%s at %s refused user %s: wrong password or no such user", e.service, e.addr, e.user)
	if e.says != "" {
		s += " (the server says: " + e.says + ")"
	}
	return s
}

func (e *refusal) Is(target error) bool { return target == ErrRefused }
func (e *refusal) Unwrap() error        { return e.cause }

// Refusal is the refusal of user by service ("PostgreSQL", "MariaDB") at addr, with the
// server's own words (which name no password), wrapping cause.
func Refusal(service, addr, user, says string, cause error) error {
	return &refusal{service: service, addr: addr, user: user, says: says, cause: cause}
}

// Postgres is err as PostgreSQL's refusal of user at addr when the server refused the
// credentials (SQLSTATE 28P01 invalid_password, 28000 invalid_authorization_specification:
// no such role, or no pg_hba.conf entry), else nil.
func Postgres(addr, user string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000") {
		return Refusal("PostgreSQL", addr, user, pe.Message, err)
	}
	return nil
}
