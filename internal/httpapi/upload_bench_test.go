package httpapi_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
)

// hostileUploads are the most expensive notebooks an attacker can send
// under the 8 MiB limit: the shapes that made the server allocate
// gigabytes before validation was bounded.
func hostileUploads() map[string][]byte {
	const size = 8<<20 - 4096
	fill := func(head, unit, tail string) []byte {
		n := (size - len(head) - len(tail)) / (len(unit) + 1)
		return []byte(head + strings.TrimSuffix(strings.Repeat(unit+",", n), ",") + tail)
	}
	return map[string][]byte{
		"empty-cells":   fill(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [`, `{}`, `]}`),
		"bad-outputs":   fill(`{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [{"cell_type": "code", "metadata": {}, "source": "", "execution_count": null, "outputs": [`, `{}`, `]}]}`),
		"wide-metadata": fill(`{"nbformat": 4, "nbformat_minor": 4, "metadata": {`, `"k":0`, `}, "cells": []}`),
		"numbers-array": fill(`{"nbformat": 4, "nbformat_minor": 4, "metadata": {"x": [`, `0`, `]}, "cells": []}`),
		// Just under the value limit: every one of them is decoded.
		"objects-at-limit": []byte(`{"nbformat": 4, "nbformat_minor": 4, "metadata": {"x": [` +
			strings.TrimSuffix(strings.Repeat(`{"a":0},`, 199_000/3), ",") + `]}, "cells": []}`),
		// One 8 MB string: valid, accepted.
		"big-string": []byte(`{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [{"cell_type": "markdown", "metadata": {}, "source": "` +
			strings.Repeat("x", size-200) + `"}]}`),
	}
}

// multipartBody wraps nb as the form POST /api/v1/submissions takes.
func multipartBody(nb []byte) ([]byte, string) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("exercise", "ch1")
	fw, _ := mw.CreateFormFile("notebook", "nb.ipynb")
	_, _ = fw.Write(nb)
	_ = mw.Close()
	return body.Bytes(), mw.FormDataContentType()
}

// peakHeap samples the heap while f runs and returns the largest growth
// over the heap before it, in bytes.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > base && m.HeapInuse-base > peak.Load() {
				peak.Store(m.HeapInuse - base)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	return peak.Load()
}

// BenchmarkWorstUpload posts each hostile notebook to a real server (in
// this process, SQLite) and reports the server's peak heap growth and the
// time to the 4xx answer (make bench; target: under 64 MB, under 100 ms).
func BenchmarkWorstUpload(b *testing.B) {
	for _, name := range []string{"empty-cells", "bad-outputs", "wide-metadata", "numbers-array", "objects-at-limit", "big-string"} {
		nb := hostileUploads()[name]
		b.Run(name, func(b *testing.B) {
			e := newLiveEnv(b, "sqlite", httpapi.DefaultTimeouts())
			tok := e.tokenTB(b, "ada", domain.RoleLearner)
			body, ct := multipartBody(nb)
			var worst uint64
			var status int
			var respLen int
			var took time.Duration
			for i := 0; i < b.N; i++ {
				peak := peakHeap(func() {
					start := time.Now()
					defer func() { took += time.Since(start) }()
					req, _ := http.NewRequest("POST", e.url+"/api/v1/submissions", bytes.NewReader(body))
					req.Header.Set("Content-Type", ct)
					req.Header.Set("Authorization", "Bearer "+tok)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					var out bytes.Buffer
					_, _ = out.ReadFrom(resp.Body)
					resp.Body.Close()
					status, respLen = resp.StatusCode, out.Len()
				})
				worst = max(worst, peak)
			}
			if status >= 500 {
				b.Fatalf("%s: status %d", name, status)
			}
			b.ReportMetric(float64(worst)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms/upload")
			b.ReportMetric(float64(respLen)/1024, "response-KiB")
			b.Logf("%s: %d bytes → %d, %s", name, len(nb), status, fmt.Sprint(respLen, " byte answer"))
		})
	}
}
