package check

import "fmt"

// Words words the report for its reader. The report's sentences are
// looked up by their English format (as the command line's messages
// are), so that English is what an unknown sentence shows; English is
// the default, and what JUnit and the GitHub annotations always carry,
// for the tools that read them.
type Words interface {
	// F is the sentence whose English format is format, formatted.
	F(format string, a ...any) string
	// Verdict is a verdict as the pages name it.
	Verdict(v string) string
	// Feedback is the grader's message for a cell, or another part's
	// reason (an execution error), as the pages word it.
	Feedback(msg string) string
}

// English is the report's own language.
var English Words = english{}

type english struct{}

func (english) F(format string, a ...any) string { return fmt.Sprintf(format, a...) }
func (english) Verdict(v string) string          { return v }
func (english) Feedback(msg string) string       { return msg }

// Finding is a sentence of the report kept as its English format and
// arguments, to be worded for each reader: a Verdict or a Feedback
// argument is worded as such, a Finding argument in turn.
type Finding struct {
	Format string
	Args   []any
}

// Verdict is a Finding's argument that names a verdict.
type Verdict string

// Feedback is a Finding's argument that is a grader's message or a reason.
type Feedback string

func found(format string, a ...any) Finding { return Finding{Format: format, Args: a} }

// Say is f in w's words.
func (f Finding) Say(w Words) string {
	args := make([]any, len(f.Args))
	for i, a := range f.Args {
		switch a := a.(type) {
		case Verdict:
			args[i] = w.Verdict(string(a))
		case Feedback:
			args[i] = w.Feedback(string(a))
		case Finding:
			args[i] = a.Say(w)
		default:
			args[i] = a
		}
	}
	return w.F(f.Format, args...)
}

// String is f in English.
func (f Finding) String() string { return f.Say(English) }

func wordsOr(w Words) Words {
	if w == nil {
		return English
	}
	return w
}
