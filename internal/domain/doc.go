// Package domain holds npugrade's domain: the types a submission passes
// through on its way from upload to score (Submission, CellResult, Lease,
// ExecutionResult, Requirement), the runner capability (Matcher, profiles),
// the verdicts, the roles, the error codes every layer uses, and the one
// lease-lost error. It imports nothing of the project, so every other
// package can depend on it without cycles.
//
// The path of a learner's notebook, by package:
//
//	httpapi → submission (validate, rebuild, store + enqueue in one transaction)
//	        → queue (lease) → runner → execution (nbconvert, sandbox)
//	        → queue.Complete → scoring (compare each graded cell) → store
package domain
