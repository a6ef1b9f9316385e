// Command linearizability checks the fault suite's lock histories for linearizability with
// porcupine: each lock name is one sequential object (model.go), checked on its own with a
// time bound. tests/faults/checkers.py (linearizable) writes the input and reads the output.
//
// Input (a file argument, or stdin), JSON:
//
//	{"objects": [{"name": "fault", "permits": 0, "ops": [
//	    {"owner": "12.0", "op": "acquire", "mode": "X", "call": 10, "ret": 20}, ...]}]}
//
// permits > 0 makes the object a semaphore of that many permits; ret < 0 means no known
// return. Output, one line per object:
//
//	ok NAME OPS MS | unknown NAME OPS MS | illegal NAME OPS MS: WHY
//
// Exit status: 0 when no object is illegal (an unknown one, whose check ran out of time, is
// neither a pass nor a failure: the caller counts it), 1 when one is, 2 on bad input.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

type object struct {
	Name    string `json:"name"`
	Permits int    `json:"permits"`
	Ops     []Op   `json:"ops"`
}

type input struct {
	Objects []object `json:"objects"`
}

// Verdict is the outcome of one object's check.
type Verdict struct {
	Result  porcupine.CheckResult
	Why     string
	Elapsed time.Duration
	info    porcupine.LinearizationInfo
	model   porcupine.Model
}

// operations turns ops into porcupine's, an unknown return becoming one after every event.
func operations(ops []Op) []porcupine.Operation {
	var last int64
	for _, op := range ops {
		if op.Call > last {
			last = op.Call
		}
		if op.Return > last {
			last = op.Return
		}
	}
	clients := map[string]int{}
	out := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		if _, ok := clients[op.Owner]; !ok {
			clients[op.Owner] = len(clients)
		}
		ret := op.Return
		if ret < 0 {
			ret = last + 1
		}
		out[i] = porcupine.Operation{
			ClientId: clients[op.Owner], Input: op, Call: op.Call, Output: nil, Return: ret,
		}
	}
	return out
}

// Check checks one object within timeout (0: none).
func Check(obj object, timeout time.Duration) Verdict {
	model := lockModel(obj.Permits)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, operations(obj.Ops), timeout)
	v := Verdict{Result: res, Elapsed: time.Since(start), info: info, model: model}
	if res == porcupine.Illegal {
		v.Why = explain(obj, info)
	}
	return v
}

func ms(ns int64) string {
	if ns < 0 {
		return "never"
	}
	return fmt.Sprintf("%.3f ms", float64(ns)/1e6)
}

// explain names the operation no order could place: the longest legal prefix found leaves it
// out although it returned first among those left, and the object's state at that point.
func explain(obj object, info porcupine.LinearizationInfo) string {
	partials := info.PartialLinearizations()
	var longest []int
	for _, p := range partials {
		for _, lin := range p {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
	}
	placed := map[int]bool{}
	states := []string{""}
	for _, id := range longest {
		placed[id] = true
		var next []string
		for _, s := range states {
			next = append(next, step(s, obj.Ops[id], obj.Permits)...)
		}
		states = dedupe(next)
	}
	stuck := -1
	for id, op := range obj.Ops {
		if placed[id] || op.Return < 0 {
			continue
		}
		if stuck < 0 || op.Return < obj.Ops[stuck].Return {
			stuck = id
		}
	}
	var described []string
	for _, s := range states {
		described = append(described, describeState(s))
	}
	why := fmt.Sprintf("the longest legal order places %d of %d operations", len(longest), len(obj.Ops))
	if stuck >= 0 {
		op := obj.Ops[stuck]
		why += fmt.Sprintf("; none then fits %s [%s, %s]", describe(op), ms(op.Call), ms(op.Return))
	}
	return why + fmt.Sprintf(" (the lock there: %v)", described)
}

func dedupe(states []string) []string {
	sort.Strings(states)
	out := states[:0]
	for i, s := range states {
		if i == 0 || s != states[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func main() {
	timeout := flag.Duration("timeout", 10*time.Second, "time bound of one object's check")
	viz := flag.String("viz", "", "directory for an HTML view of each illegal object")
	flag.Parse()
	var r io.Reader = os.Stdin
	if flag.NArg() > 0 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer f.Close()
		r = f
	}
	var in input
	if err := json.NewDecoder(r).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "bad input:", err)
		os.Exit(2)
	}
	status := 0
	for i, obj := range in.Objects {
		v := Check(obj, *timeout)
		elapsed := float64(v.Elapsed.Microseconds()) / 1000
		switch v.Result {
		case porcupine.Ok:
			fmt.Printf("ok %s %d %.1f\n", obj.Name, len(obj.Ops), elapsed)
		case porcupine.Unknown:
			fmt.Printf("unknown %s %d %.1f\n", obj.Name, len(obj.Ops), elapsed)
		default:
			status = 1
			fmt.Printf("illegal %s %d %.1f: %s\n", obj.Name, len(obj.Ops), elapsed, v.Why)
			if *viz != "" {
				path := filepath.Join(*viz, fmt.Sprintf("linearizability-%d.html", i))
				if err := porcupine.VisualizePath(v.model, v.info, path); err != nil {
					fmt.Fprintln(os.Stderr, "visualization:", err)
				}
			}
		}
	}
	os.Exit(status)
}
