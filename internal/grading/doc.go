// Package grading holds npugrade's domain: the types a submission passes
// through on its way from upload to score (Exercise, Submission, Job,
// CellResult), the verdicts, the roles, and the error codes every layer
// uses. It imports nothing of the project, so every other package can
// depend on it without cycles.
//
// The path of a learner's notebook, by package:
//
//	httpapi → submission (validate, rebuild, store + enqueue in one transaction)
//	        → queue (lease) → runner → execution (nbconvert, sandbox)
//	        → queue.Complete → scoring (compare each graded cell) → store
package grading
