// Package pyclient is the notebook client learners load from the server:
// npugrade.py (standard library only), served as a file and as a wheel on
// a PEP 503 simple index, each with the serving server's URL written in,
// so that `import npugrade` needs no configuration but a sign-in.
package pyclient

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	_ "embed"
)

//go:embed npugrade.py
var source []byte

// Version is the client's version (its __version__).
var Version = func() string {
	m := regexp.MustCompile(`(?m)^__version__ = "([0-9.]+)"$`).FindSubmatch(source)
	if m == nil {
		panic("pyclient: npugrade.py has no __version__")
	}
	return string(m[1])
}()

var servedBy = regexp.MustCompile(`(?m)^_SERVED_BY = None$`)

// Module is npugrade.py with server as its default server ("": none).
func Module(server string) []byte {
	if server == "" {
		return source
	}
	return servedBy.ReplaceAll(source, []byte("_SERVED_BY = "+strconv.Quote(server)))
}

// WheelName is the wheel's file name.
func WheelName() string { return "npugrade-" + Version + "-py3-none-any.whl" }

// Wheel is the package pip installs: the module and its dist-info, with
// the RECORD hashes pip checks. It is built once per server URL.
func Wheel(server string) (data []byte, sha256hex string, err error) {
	wheels.mu.Lock()
	e, ok := wheels.m[server]
	wheels.mu.Unlock()
	if ok {
		return e.data, e.sha, nil
	}
	data, err = buildWheel(Module(server))
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(data)
	e = wheel{data: data, sha: hex.EncodeToString(sum[:])}
	wheels.mu.Lock()
	if len(wheels.m) < maxWheels { // the Host header is the client's: bounded
		wheels.m[server] = e
	}
	wheels.mu.Unlock()
	return e.data, e.sha, nil
}

type wheel struct {
	data []byte
	sha  string
}

// wheels caches the wheel by server URL: the few URLs a server is reached
// by; any more are built per request.
var wheels = struct {
	mu sync.Mutex
	m  map[string]wheel
}{m: map[string]wheel{}}

const maxWheels = 16

func buildWheel(module []byte) ([]byte, error) {
	info := "npugrade-" + Version + ".dist-info/"
	files := []struct {
		name string
		data []byte
	}{
		{"npugrade.py", module},
		{info + "METADATA", []byte("Metadata-Version: 2.1\nName: npugrade\nVersion: " + Version +
			"\nSummary: Check and submit TorchAir exercises to npugrade from Jupyter\nRequires-Python: >=3.9\n")},
		{info + "WHEEL", []byte("Wheel-Version: 1.0\nGenerator: npugrade\nRoot-Is-Purelib: true\nTag: py3-none-any\n")},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record bytes.Buffer
	// A fixed time: the same server URL always gives the same bytes.
	mod := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: mod})
		if err != nil {
			return nil, fmt.Errorf("wheel: %w", err)
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, fmt.Errorf("wheel: %w", err)
		}
		sum := sha256.Sum256(f.data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.data))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: info + "RECORD", Method: zip.Deflate, Modified: mod})
	if err != nil {
		return nil, fmt.Errorf("wheel: %w", err)
	}
	if _, err := w.Write(record.Bytes()); err != nil {
		return nil, fmt.Errorf("wheel: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("wheel: %w", err)
	}
	return buf.Bytes(), nil
}

// ProjectIndex is the simple index's page of the npugrade project: one
// link to the wheel, with its hash for pip to check.
func ProjectIndex(wheelURL, sha256hex string) []byte {
	return []byte("<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.0\"><title>Links for npugrade</title></head><body>\n" +
		"<h1>Links for npugrade</h1>\n<a href=\"" + wheelURL + "#sha256=" + sha256hex + "\" data-requires-python=\"&gt;=3.9\">" + WheelName() + "</a>\n</body></html>\n")
}

// RootIndex is the simple index's root: the one project.
func RootIndex() []byte {
	return []byte("<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.0\"><title>Simple index</title></head><body>\n<a href=\"npugrade/\">npugrade</a>\n</body></html>\n")
}
