package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlock/rlock/bindings/go/internal/redistest"
)

var redis *redistest.Server

// The test binary doubles as the worker: run with RLOCK_FAULT_WORKER=1 it is main().
func TestMain(m *testing.M) {
	if os.Getenv("RLOCK_FAULT_WORKER") == "1" {
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

// Processes of the semaphore modes: their history never shows more owners inside than there
// are permits, every permit comes back, and --clock realtime stamps with CLOCK_REALTIME.
func TestSemaphoreModesKeepTheBound(t *testing.T) {
	for _, kind := range []string{"semaphore", "permits"} {
		t.Run(kind, func(t *testing.T) {
			const processes, permits = 3, 2
			name := fmt.Sprintf("go:fault-worker:%d:%s", os.Getpid(), kind)
			log := filepath.Join(t.TempDir(), "history")
			cmds := make([]*exec.Cmd, processes)
			outs := make([]*bytes.Buffer, processes)
			started := time.Now().UnixNano()
			for i := range cmds {
				cmds[i] = exec.Command(os.Args[0], "loop", "--url", redis.URL, "--names", name,
					"--kind", kind, "--permits", strconv.Itoa(permits), "--threads", "3",
					"--cycles", "40", "--hold-us", "500", "--log", log, "--clock", "realtime")
				cmds[i].Env = append(os.Environ(), "RLOCK_FAULT_WORKER=1")
				outs[i] = &bytes.Buffer{}
				cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
				if err := cmds[i].Start(); err != nil {
					t.Fatal(err)
				}
			}
			for i, cmd := range cmds {
				if err := cmd.Wait(); err != nil {
					t.Fatalf("worker %d: %v\n%s", i, err, outs[i])
				}
				if !strings.Contains(outs[i].String(), "done cycles=120 acquired=120 errors=0") {
					t.Fatalf("worker %d: %s", i, outs[i])
				}
			}
			ended := time.Now().UnixNano()
			text, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			type event struct {
				at    int64
				delta int
			}
			var events []event
			for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
				f := strings.Fields(line)
				if len(f) < 5 || f[3] != "S" {
					t.Fatalf("bad history line %q", line)
				}
				switch {
				case f[0] == "acq" && f[6] == "0":
					at, _ := strconv.ParseInt(f[5], 10, 64)
					events = append(events, event{at, 1})
				case f[0] == "leave":
					at, _ := strconv.ParseInt(f[4], 10, 64)
					events = append(events, event{at, -1})
				}
			}
			if len(events) != 2*processes*120 {
				t.Fatalf("%d enter and leave lines, want %d", len(events), 2*processes*120)
			}
			sort.Slice(events, func(i, j int) bool {
				return events[i].at < events[j].at || events[i].at == events[j].at && events[i].delta < events[j].delta
			})
			if events[0].at < started || events[len(events)-1].at > ended {
				t.Fatalf("stamps %d..%d are not CLOCK_REALTIME within %d..%d", events[0].at, events[len(events)-1].at, started, ended)
			}
			inside, most := 0, 0
			for _, e := range events {
				inside += e.delta
				most = max(most, inside)
			}
			if most > permits {
				t.Fatalf("%d owners inside at once with %d permits", most, permits)
			}
			if v, err := redis.Do("GET", name); err != nil || v != strconv.Itoa(permits) {
				t.Fatalf("GET %s = %v, %v; want %d", name, v, err, permits)
			}
		})
	}
}
