// Package domain holds npugrade's domain: the types a submission passes
// through on its way from upload to score (Submission, CellResult, Lease,
// ExecutionResult, Requirement), the runner capability (Matcher, profiles),
// the verdicts, the roles, the error codes every layer uses, and the one
// lease-lost error. It also holds the read models the pages and the API
// show (gradebook rows, statistics, regrades, sessions, tokens, the audit
// log) and the service interfaces the HTTP layers depend on instead of the
// store (services.go; package store implements them). It imports nothing
// of the project, so every other package can depend on it without cycles.
//
// The path of a learner's notebook, by package:
//
//	httpapi → submission (validate, rebuild, store + enqueue in one transaction)
//	        → queue (lease) → runner → execution (nbconvert, sandbox)
//	        → queue.Complete → scoring (compare each graded cell) → store
package domain
