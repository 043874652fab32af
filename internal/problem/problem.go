// Package problem is RFC 9457 problem details on both sides of the wire:
// the one map between the domain's error codes and HTTP statuses, the
// writer the server's handlers answer with, and the decoder its clients
// (the runner, npugrade submit) read a refusal with. It depends on the
// domain alone, so both sides share it.
package problem

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
)

// MediaType is a problem's Content-Type.
const MediaType = "application/problem+json"

// Detail is an RFC 9457 problem detail. Problems lists every individual
// fault when there were several.
type Detail struct {
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Status   int      `json:"status"`
	Detail   string   `json:"detail"`
	Instance string   `json:"instance,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// statuses maps the domain's error codes to HTTP statuses. A database
// fault is 503 (unavailable) or 507 (storage), never 500.
var statuses = map[string]int{
	domain.EUNAVAILABLE:  http.StatusServiceUnavailable,
	domain.ESTORAGE:      http.StatusInsufficientStorage,
	domain.EINVALID:      http.StatusUnprocessableEntity,
	domain.ENOTFOUND:     http.StatusNotFound,
	domain.EUNAUTHORIZED: http.StatusUnauthorized,
	domain.EFORBIDDEN:    http.StatusForbidden,
	domain.ECONFLICT:     http.StatusConflict,
	domain.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	domain.ERATELIMIT:    http.StatusTooManyRequests,
}

// Status is the HTTP status of a domain error code; ok is false for an
// internal error (500), which is logged and not shown.
func Status(code string) (status int, ok bool) {
	if s, ok := statuses[code]; ok {
		return s, true
	}
	return http.StatusInternalServerError, false
}

// Code is the domain error code of an HTTP status (EINTERNAL for one the
// map does not name).
func Code(status int) string {
	for c, s := range statuses {
		if s == status {
			return c
		}
	}
	return domain.EINTERNAL
}

// New is the problem detail of status for a request to instance.
func New(status int, detail, instance string, problems []string) Detail {
	return Detail{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Instance: instance, Problems: problems}
}

// Decode reads a refusal the server answered with (status >= 300, body
// as read) into a *domain.Error: the code its status maps to, the detail
// as its message, every problem listed. A body that is not a problem
// keeps its text (trimmed) as the message.
func Decode(status int, body []byte) *domain.Error {
	var d Detail
	if err := json.Unmarshal(body, &d); err != nil || (d.Title == "" && d.Detail == "") {
		msg := strings.TrimSpace(string(body))
		if msg == "" {
			msg = http.StatusText(status)
		}
		return &domain.Error{Code: Code(status), Message: fmt.Sprintf("HTTP %d: %s", status, msg)}
	}
	if d.Detail == "" {
		d.Detail = d.Title
	}
	return &domain.Error{Code: Code(status), Message: d.Detail, Problems: d.Problems}
}
