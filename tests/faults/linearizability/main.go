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

// chunkOps is the most operations one porcupine check of a reduced history is given: its
// cache holds a bitset of all the check's operations per step, so cost grows as the square.
const chunkOps = 2000

// Check checks one object within timeout (0: none). Unless exact, the history is first reduced
// (reduce) and checked in chunks, each from the states the one before ended in.
func Check(obj object, timeout time.Duration, exact bool) Verdict {
	start := time.Now()
	deadline := start.Add(timeout)
	chunks := [][]Op{obj.Ops}
	if !exact {
		chunks = split(reduce(obj.Ops))
	}
	states := []string{""}
	for _, ops := range chunks {
		left := time.Duration(0)
		if timeout > 0 {
			if left = time.Until(deadline); left <= 0 {
				return Verdict{Result: porcupine.Unknown, Elapsed: time.Since(start)}
			}
		}
		model := lockModel(obj.Permits, states)
		res, info := porcupine.CheckOperationsVerbose(model, operations(ops), left)
		if res != porcupine.Ok {
			v := Verdict{Result: res, Elapsed: time.Since(start), info: info, model: model}
			if res == porcupine.Illegal {
				v.Why = explain(object{obj.Name, obj.Permits, ops}, states, info)
			}
			return v
		}
		states = replay(states, ops, obj.Permits, longest(info))
	}
	return Verdict{Result: porcupine.Ok, Elapsed: time.Since(start)}
}

// reduce moves every operation with a known return to one instant: an acquire to its return,
// a release or an end to its call. The verdict stays the same: any legal order of the original
// can be made one of the reduced history by shrinking each hold to [acquire return, release
// call], and holds present at an instant then form a subset of those present before, which a
// lock (no two conflicting owners) or a semaphore (at most N) still admits; the reverse holds
// as the reduced intervals lie inside the originals. Operations with no known return (the
// ghosts) keep their intervals, and so do the releases of an owner with ghosts: one may need
// a ghost granted after its call. Without overlapping intervals the search is short.
func reduce(ops []Op) []Op {
	ghosts := map[[2]string]bool{}
	for _, op := range ops {
		if op.Kind == "acquire?" {
			ghosts[[2]string{op.Owner, op.Mode}] = true
		}
	}
	out := make([]Op, len(ops))
	for i, op := range ops {
		out[i] = op
		out[i].span = &[2]int64{op.Call, op.Return}
		if op.Return < 0 || (op.Kind == "release" && ghosts[[2]string{op.Owner, op.Mode}]) {
			continue
		}
		at := op.Call
		if op.Kind == "acquire" {
			at = op.Return
		}
		out[i].Call, out[i].Return = at, at
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// split cuts reduced operations (sorted by call) into chunks of about chunkOps, only between
// instants (operations at one instant may take effect in any order) and not after an operation
// with no known return (it may take effect anywhere after).
func split(ops []Op) [][]Op {
	var chunks [][]Op
	begin := 0
	for i := 1; i < len(ops); i++ {
		if ops[i-1].Return < 0 {
			break
		}
		if i-begin >= chunkOps && ops[i].Call > ops[i-1].Call {
			chunks = append(chunks, ops[begin:i])
			begin = i
		}
	}
	return append(chunks, ops[begin:])
}

// longest is the longest (for a legal history, complete) linearization porcupine found.
func longest(info porcupine.LinearizationInfo) []int {
	var best []int
	for _, p := range info.PartialLinearizations() {
		for _, lin := range p {
			if len(lin) > len(best) {
				best = lin
			}
		}
	}
	return best
}

// replay applies ops in the order lin from every state of states.
func replay(states []string, ops []Op, permits int, lin []int) []string {
	for _, id := range lin {
		var next []string
		for _, s := range states {
			next = append(next, step(s, ops[id], permits)...)
		}
		states = dedupe(next)
	}
	return states
}

func ms(ns int64) string {
	if ns < 0 {
		return "never"
	}
	return fmt.Sprintf("%.3f ms", float64(ns)/1e6)
}

// explain names the operation no order could place: the longest legal prefix found leaves it
// out although it returned first among those left, and the object's state at that point.
func explain(obj object, init []string, info porcupine.LinearizationInfo) string {
	best := longest(info)
	placed := map[int]bool{}
	for _, id := range best {
		placed[id] = true
	}
	states := replay(init, obj.Ops, obj.Permits, best)
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
	why := fmt.Sprintf("the longest legal order places %d of %d operations", len(best), len(obj.Ops))
	if stuck >= 0 {
		op := obj.Ops[stuck]
		span := [2]int64{op.Call, op.Return}
		if op.span != nil {
			span = *op.span
		}
		why += fmt.Sprintf("; none then fits %s [%s, %s]", describe(op), ms(span[0]), ms(span[1]))
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
	exact := flag.Bool("exact", false, "check the operations' own intervals, not the reduced ones")
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
		v := Check(obj, *timeout, *exact)
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
