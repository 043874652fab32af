package compare

import (
	"github.com/npugrade/npugrade/internal/notebook"
)

func stream(name, text string) *notebook.Output {
	return &notebook.Output{OutputType: notebook.OutputStream, Name: name, Text: notebook.MultilineString(text)}
}

func stdout(text string) *notebook.Output { return stream(TargetStdout, text) }

func result(mime, text string) *notebook.Output {
	return &notebook.Output{
		OutputType: notebook.OutputExecuteResult,
		Data:       map[string]notebook.MultilineString{mime: notebook.MultilineString(text)},
	}
}

func display(mime, text string) *notebook.Output {
	return &notebook.Output{
		OutputType: notebook.OutputDisplayData,
		Data:       map[string]notebook.MultilineString{mime: notebook.MultilineString(text)},
	}
}

func raised(ename, evalue string) *notebook.Output {
	return &notebook.Output{OutputType: notebook.OutputError, Ename: ename, Evalue: evalue, Traceback: []string{"\x1b[31m" + ename + "\x1b[0m"}}
}

func outs(o ...*notebook.Output) []*notebook.Output { return o }

func ptr[T any](v T) *T { return &v }
