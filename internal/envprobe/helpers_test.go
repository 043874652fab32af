package envprobe

import (
	"os"
	"path/filepath"
	"testing"
)

// recording returns the content of a file in testdata/recordings: real
// output from Ascend hosts, see testdata/recordings/README.md for sources.
func recording(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "recordings", name))
	if err != nil {
		t.Fatalf("read recording: %v", err)
	}
	return string(data)
}
