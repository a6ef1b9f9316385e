package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rlock/rlock/bindings/go/internal/redistest"
)

var redis *redistest.Server

// The test binary doubles as the worker: run with RLOCK_CONTEND_WORKER=1 it is main().
func TestMain(m *testing.M) {
	if os.Getenv("RLOCK_CONTEND_WORKER") == "1" {
		main()
		return
	}
	s, err := redistest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "no redis server for the tests:", err)
		os.Exit(1)
	}
	redis = s
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

func worker(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "RLOCK_CONTEND_WORKER=1")
	return cmd
}

// Several processes increment shared file counters under the locks: any overlap is reported by
// a worker (exit 3) and any lost update shows in the final counts.
func TestProcessesExcludeEachOther(t *testing.T) {
	dir := t.TempDir()
	names := []string{fmt.Sprintf("go:contend:%d:a", os.Getpid()), fmt.Sprintf("go:contend:%d:b", os.Getpid())}
	const processes, iterations = 4, 40
	cmds := make([]*exec.Cmd, processes)
	outs := make([]*bytes.Buffer, processes)
	errs := make([]*bytes.Buffer, processes)
	for i := range cmds {
		cmds[i] = worker(append([]string{redis.URL, dir, strconv.Itoa(iterations)}, names...)...)
		outs[i], errs[i] = &bytes.Buffer{}, &bytes.Buffer{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], errs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v, stderr: %s", i, err, errs[i])
		}
		if got := strings.TrimSpace(outs[i].String()); got != fmt.Sprintf("ok %d", iterations) {
			t.Fatalf("worker %d printed %q", i, got)
		}
	}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name+".count"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(string(data)), strconv.Itoa(processes*iterations/len(names)); got != want {
			t.Fatalf("%s counted %s, want %s (lost updates)", name, got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, name+".inside")); !os.IsNotExist(err) {
			t.Fatalf("%s.inside left behind: %v", name, err)
		}
	}
}

func TestWorkerReportsOverlap(t *testing.T) {
	dir := t.TempDir()
	name := fmt.Sprintf("go:contend:%d:overlap", os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, name+".inside"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := worker(redis.URL, dir, "1", name)
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("want exit 3, got %v", err)
	}
	if got := strings.TrimSpace(stderr.String()); got != "overlap on "+name {
		t.Fatalf("stderr %q", got)
	}
}

func TestWorkerReportsBindingErrors(t *testing.T) {
	var stderr bytes.Buffer
	cmd := worker("redis://127.0.0.1:1", t.TempDir(), "1", "x")
	cmd.Stderr = &stderr
	cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(stderr.String(), "rlock:") {
		t.Fatalf("want exit 1 with the error, got %v: %s", cmd.ProcessState, stderr.String())
	}
}
