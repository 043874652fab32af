package execution_test

import (
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/notebook"
)

const threeCells = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
 {"cell_type": "code", "id": "a", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": 1},
 {"cell_type": "code", "id": "b", "metadata": {}, "source": "big()", "outputs": [], "execution_count": null},
 {"cell_type": "code", "id": "c", "metadata": {}, "source": "print(x)", "outputs": [], "execution_count": null}]}`

// TestAnnotate: the stop annotation is a pure function of the executed
// notebook and how the run ended, the same for every backend.
func TestAnnotate(t *testing.T) {
	t.Parallel()
	one := 1
	for name, tc := range map[string]struct {
		stop       execution.Stop
		killed     bool
		reason     string
		annotated  int // the cell that carries the stop, -1 none
		memoryNote bool
	}{
		"memory limit": {execution.Stop{Cell: &one, KernelDied: true, Limits: domain.LimitHits{MemoryLimitHit: true, MemoryLimit: 256 << 20}},
			true, "cell 2 exceeded the 256 MiB memory limit", 1, true},
		"job deadline": {execution.Stop{Cell: &one, JobKilled: true, JobTimeout: 5 * time.Minute},
			true, "did not finish within the 5m0s limit for the whole run (cell 2 was running)", 1, false},
		"ran to the end": {execution.Stop{}, false, "", -1, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, killed, reason, err := execution.Annotate([]byte(threeCells), tc.stop)
			if err != nil {
				t.Fatal(err)
			}
			if killed != tc.killed || !strings.Contains(reason, tc.reason) {
				t.Fatalf("killed %v reason %q, want %v %q", killed, reason, tc.killed, tc.reason)
			}
			nb, err := notebook.ParseExecuted(out)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range nb.Cells {
				m := notebook.ReadCellMeta(c)
				if (m.Stopped != "") != (i == tc.annotated) {
					t.Errorf("cell %d: stopped %q", i, m.Stopped)
				}
				if i == tc.annotated && (m.MemoryLimit != 0) != tc.memoryNote {
					t.Errorf("cell %d: memory limit %d", i, m.MemoryLimit)
				}
			}
		})
	}
}
