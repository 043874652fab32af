package procid

import (
	"os"
	"os/exec"
	"testing"
)

func TestStartTellsProcessesApart(t *testing.T) {
	t.Parallel()
	self := Start(os.Getpid())
	if self == "" || !Alive(os.Getpid(), self) {
		t.Fatalf("this process: start %q, not alive", self)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start := Start(pid)
	if start == "" || !Alive(pid, start) {
		t.Fatalf("child %d: start %q, not alive", pid, start)
	}
	if Alive(pid, start+"1") {
		t.Errorf("child %d alive under another start time", pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if Alive(pid, start) || Start(pid) != "" {
		t.Errorf("child %d still alive after it was reaped", pid)
	}
	if Alive(0, self) || Alive(os.Getpid(), "") {
		t.Error("pid 0 or an empty start time counted as alive")
	}
}
