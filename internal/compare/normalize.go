package compare

import (
	"regexp"
	"strings"

	"github.com/npugrade/npugrade/internal/notebook"
)

// Normalize returns a normalised copy of outs, as Jupyter would display them;
// outs is not modified. Comparing raw outputs would fail on differences the
// learner cannot see (how the kernel chunked a stream, a progress bar's
// intermediate states, line endings), so every comparison starts here.
//
//   - A run of consecutive stream outputs (no other output type between them)
//     is coalesced into one output per stream name, in the order the names
//     first appear: [stdout, stderr, stdout] becomes [stdout, stderr]. An
//     execute_result or display_data output ends the run, as it ends the
//     output area in which a carriage return could act.
//   - In stream text, CRLF (and CR…CRLF) becomes LF, ANSI escape sequences
//     are removed, a backspace erases the character before it (unless that
//     is a newline), and a carriage return moves to the start of the line so
//     that the text after it overwrites what is there, as a terminal does:
//     "50%\r100%" becomes "100%" and "abcdef\rxy" becomes "xycdef".
//     Backspaces are applied before carriage returns, which is JupyterLab's
//     order.
//   - In the text (non-binary) data of execute_result and display_data,
//     CRLF (and CR…CRLF) becomes LF.
//   - Error outputs are copied unchanged; nil entries are dropped.
//
// Normalize is idempotent.
func Normalize(outs []*notebook.Output) []*notebook.Output {
	res := make([]*notebook.Output, 0, len(outs))
	for i := 0; i < len(outs); {
		o := outs[i]
		if o == nil {
			i++
			continue
		}
		if o.OutputType != notebook.OutputStream {
			res = append(res, normalizeRich(o))
			i++
			continue
		}
		var names []string
		texts := map[string]*strings.Builder{}
		for ; i < len(outs); i++ {
			s := outs[i]
			if s == nil {
				continue
			}
			if s.OutputType != notebook.OutputStream {
				break
			}
			b := texts[s.Name]
			if b == nil {
				b = &strings.Builder{}
				texts[s.Name] = b
				names = append(names, s.Name)
			}
			b.WriteString(string(s.Text))
		}
		for _, name := range names {
			res = append(res, &notebook.Output{
				OutputType: notebook.OutputStream,
				Name:       name,
				Text:       notebook.MultilineString(renderStream(texts[name].String())),
			})
		}
	}
	return res
}

func normalizeRich(o *notebook.Output) *notebook.Output {
	c := *o
	if o.Data != nil {
		c.Data = make(map[string]notebook.MultilineString, len(o.Data))
		for mime, v := range o.Data {
			if !isBinaryMIME(mime) {
				v = notebook.MultilineString(crlfToLF(string(v)))
			}
			c.Data[mime] = v
		}
	}
	return &c
}

// ansiPattern matches CSI sequences (colours, cursor moves) and OSC
// sequences (titles, hyperlinks); any ESC left over is dropped as well, so
// that removing one sequence cannot splice another together.
var ansiPattern = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)`)

// renderStream applies what a terminal (and Jupyter's output area) does with
// control characters; see Normalize.
func renderStream(s string) string {
	if strings.IndexByte(s, '\x1b') >= 0 {
		s = ansiPattern.ReplaceAllString(s, "")
		s = strings.ReplaceAll(s, "\x1b", "")
	}
	if !strings.ContainsAny(s, "\r\b") {
		return s
	}
	// CRLF first: the common Windows-style case then needs no rune pass.
	s = crlfToLF(s)
	if strings.IndexByte(s, '\b') >= 0 {
		rs := make([]rune, 0, len(s))
		for _, r := range s {
			if r == '\b' {
				if n := len(rs); n > 0 && rs[n-1] != '\n' {
					rs = rs[:n-1]
				}
				continue
			}
			rs = append(rs, r)
		}
		s = string(rs)
	}
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		if strings.IndexByte(line, '\r') < 0 {
			b.WriteString(line)
			continue
		}
		// Each segment after a \r overwrites the line from its start; the
		// total work is linear in the line length.
		var buf []rune
		for _, seg := range strings.Split(line, "\r") {
			j := 0
			for _, r := range seg {
				if j < len(buf) {
					buf[j] = r
				} else {
					buf = append(buf, r)
				}
				j++
			}
		}
		b.WriteString(string(buf))
	}
	return b.String()
}

// crlfToLF turns every run of carriage returns before a line feed into the
// line feed alone ("\r\r\n" too, as Jupyter does), so that a second pass
// finds nothing to change.
func crlfToLF(s string) string {
	if !strings.Contains(s, "\r\n") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\r' {
			j := i
			for j < len(s) && s[j] == '\r' {
				j++
			}
			if j < len(s) && s[j] == '\n' {
				i = j - 1 // the \n is written next
				continue
			}
			b.WriteString(s[i:j])
			i = j - 1
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isBinaryMIME reports whether data of this MIME type is base64 in nbformat
// (images except SVG, PDF, audio, video): such data is compared as bytes and
// shown as a size and hash, never as text.
func isBinaryMIME(mime string) bool {
	switch {
	case strings.HasPrefix(mime, "image/"):
		return !strings.HasSuffix(mime, "+xml")
	case strings.HasPrefix(mime, "audio/"), strings.HasPrefix(mime, "video/"):
		return true
	}
	return mime == "application/pdf" || mime == "application/octet-stream"
}

func isStreamTarget(t string) bool { return t == TargetStdout || t == TargetStderr }

// parts returns the pieces of already normalised outputs that make up
// target: the stream outputs of that name, or the data[target] of each
// execute_result and display_data output, in order.
func parts(outs []*notebook.Output, target string) []string {
	var ps []string
	for _, o := range outs {
		if o == nil {
			continue
		}
		switch o.OutputType {
		case notebook.OutputStream:
			if o.Name == target && isStreamTarget(target) {
				ps = append(ps, string(o.Text))
			}
		case notebook.OutputExecuteResult, notebook.OutputDisplayData:
			if isStreamTarget(target) {
				continue
			}
			if v, ok := o.Data[target]; ok {
				ps = append(ps, string(v))
			}
		}
	}
	return ps
}

// joinParts makes one text of a target's pieces. Stream pieces are
// concatenated (a display between two prints does not add a newline);
// rich pieces are separate output blocks in Jupyter, so each starts on a
// new line.
func joinParts(target string, ps []string) string {
	if isStreamTarget(target) {
		return strings.Join(ps, "")
	}
	var b strings.Builder
	for _, p := range ps {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(p)
	}
	return b.String()
}

// Text returns the normalised text of one target of outs: for stdout and
// stderr the stream text, for a MIME type the data of that type of every
// execute_result and display_data output, in order, each starting on a new
// line. Binary MIME types give their base64 text. ok is false when the
// target is absent or empty. Text normalises outs itself.
func Text(outs []*notebook.Output, target string) (text string, ok bool) {
	text = joinParts(target, parts(Normalize(outs), target))
	return text, text != ""
}

// FirstError returns the first error output of outs, or nil. Errors are not
// a comparison target: the error and no-error modes look at them, and the
// other modes fail when only one side raised.
func FirstError(outs []*notebook.Output) *notebook.Output {
	for _, o := range outs {
		if o != nil && o.OutputType == notebook.OutputError {
			return o
		}
	}
	return nil
}
