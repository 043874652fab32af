package importer

import "fmt"

// Note is one of a Report's notes kept as its English format and
// arguments, so that a command line can word it in its reader's language
// (Report.NotesIn); a Note argument is worded in turn. Notes holds them
// in English.
type Note struct {
	Format string
	Args   []any
}

// Say is n formatted by sprintf, the sentence whose English format is
// format in the reader's language.
func (n Note) Say(sprintf func(format string, a ...any) string) string {
	args := make([]any, len(n.Args))
	for i, a := range n.Args {
		if sub, ok := a.(Note); ok {
			a = sub.Say(sprintf)
		}
		args[i] = a
	}
	return sprintf(n.Format, args...)
}

func noted(format string, a ...any) Note { return Note{Format: format, Args: a} }

// note adds a note about a converted cell.
func (r *Report) note(format string, a ...any) {
	n := noted(format, a...)
	r.Notes = append(r.Notes, n.Say(fmt.Sprintf))
	r.notes = append(r.notes, n)
}

// NotesIn is Notes, each formatted by sprintf (the sentence whose English
// format is format, in the reader's language).
func (r Report) NotesIn(sprintf func(format string, a ...any) string) []string {
	if len(r.notes) != len(r.Notes) {
		return r.Notes // notes added by hand: only their English is known
	}
	out := make([]string, len(r.notes))
	for i, n := range r.notes {
		out[i] = n.Say(sprintf)
	}
	return out
}
