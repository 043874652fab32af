package domain

import (
	"errors"
	"fmt"
)

// Error codes. They are mapped to HTTP statuses only in httpapi.
const (
	EINVALID      = "invalid"
	ENOTFOUND     = "not_found"
	EUNAUTHORIZED = "unauthorized"
	EFORBIDDEN    = "forbidden"
	ECONFLICT     = "conflict"
	ETOOLARGE     = "too_large"
	ERATELIMIT    = "rate_limited"
	EINTERNAL     = "internal"
	// EUNAVAILABLE: the database (or another dependency) does not answer
	// now; the request may be retried (503 with Retry-After).
	EUNAVAILABLE = "unavailable"
	// ESTORAGE: the database cannot store more (disk full, read-only): 507.
	ESTORAGE = "insufficient_storage"
)

// Error is an application error with a code and a message meant for users.
// Problems lists every individual problem when there are several (an upload
// with three faults reports all three).
type Error struct {
	Code     string
	Message  string
	Problems []string
}

func (e *Error) Error() string {
	if len(e.Problems) == 0 {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Problems)
}

// Errorf returns an *Error with the given code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or EINTERNAL.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return EINTERNAL
}

// ErrorMessage returns the user-facing message of err, hiding internal details.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// ErrorProblems returns the individual problems of err, if any.
func ErrorProblems(err error) []string {
	var e *Error
	if errors.As(err, &e) {
		return e.Problems
	}
	return nil
}

// ErrLeaseLost means a lease token no longer owns its job: the lease
// expired and was reaped, the job was canceled, or another runner holds it.
// The queue returns it (wrapped); a runner source returns it (wrapped, see
// LeaseLost) when the server refuses the lease, and the runner then drops
// the job's result.
var ErrLeaseLost = errors.New("lease lost")

// LeaseLost wraps err so that errors.Is(err, ErrLeaseLost) holds.
func LeaseLost(err error) error { return fmt.Errorf("%w: %v", ErrLeaseLost, err) }
