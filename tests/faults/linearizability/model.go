package main

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The sequential object one lock name is: the holds inside it. Each hold is an owner, a mode
// (X exclusive, R read, W write, S a semaphore permit) and whether the history saw it granted
// (a ghost is a grant whose reply never came back: the owner does not know it holds).
//
// Operations (Op.Kind):
//
//	acquire   granted: legal only when no other owner holds a conflicting mode (or, in a
//	          semaphore, fewer than its permits are held); adds a hold
//	acquire?  outcome unknown (error or lost reply): either nothing happened, or a ghost hold
//	          was added, under the same rule as a grant
//	release   returned ok: the owner must hold that mode (a grant or a ghost); removes it
//	end       the owner's section ended without a release that returned ok (a failed release,
//	          a kill, a lapsed lease): its grant is gone, whatever the server said
//	lapse     a ghost's lease ran out (or it was never there): removes the owner's ghost, if any
//
// State is a canonical string (sorted holds, one per line) so that porcupine's == compares it.

// Op is one operation of the JSON input.
type Op struct {
	Owner string `json:"owner"`
	Kind  string `json:"op"`
	Mode  string `json:"mode"`
	Call  int64  `json:"call"`
	// Return < 0: the operation has no known return (it may take effect at any later time).
	Return int64 `json:"ret"`
	// span is [Call, Return] as logged, kept for messages when reduce moved them.
	span *[2]int64
}

type hold struct {
	owner, mode string
	ghost       bool
}

func decode(state string) []hold {
	if state == "" {
		return nil
	}
	lines := strings.Split(state, "\n")
	out := make([]hold, len(lines))
	for i, l := range lines {
		f := strings.Split(l, " ")
		out[i] = hold{f[0], f[1], len(f) > 2}
	}
	return out
}

func encode(holds []hold) string {
	lines := make([]string, len(holds))
	for i, h := range holds {
		lines[i] = h.owner + " " + h.mode
		if h.ghost {
			lines[i] += " ghost"
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// admits says whether owner may take mode next to holds: a semaphore counts permits, a lock
// lets one owner in, or several readers (an owner never conflicts with itself: reentrancy).
func admits(holds []hold, owner, mode string, permits int) bool {
	if mode == "S" {
		inside := 0
		for _, h := range holds {
			if h.mode == "S" {
				inside++
			}
		}
		return inside < permits
	}
	for _, h := range holds {
		if h.owner != owner && !(h.mode == "R" && mode == "R") {
			return false
		}
	}
	return true
}

// without returns holds less the one at i.
func without(holds []hold, i int) []hold {
	out := make([]hold, 0, len(holds)-1)
	out = append(out, holds[:i]...)
	return append(out, holds[i+1:]...)
}

func find(holds []hold, owner, mode string, ghost bool) int {
	for i, h := range holds {
		if h.owner == owner && h.mode == mode && h.ghost == ghost {
			return i
		}
	}
	return -1
}

// step gives every state the object can be in after op from state (none: op is illegal there).
func step(state string, op Op, permits int) []string {
	holds := decode(state)
	switch op.Kind {
	case "acquire", "acquire?":
		var next []string
		if op.Kind == "acquire?" {
			next = append(next, state)
		}
		if admits(holds, op.Owner, op.Mode, permits) {
			next = append(next, encode(append(append([]hold{}, holds...),
				hold{op.Owner, op.Mode, op.Kind == "acquire?"})))
		}
		return next
	case "release":
		var next []string
		for _, ghost := range []bool{false, true} {
			if i := find(holds, op.Owner, op.Mode, ghost); i >= 0 {
				next = append(next, encode(without(holds, i)))
			}
		}
		return next
	case "end", "lapse":
		if i := find(holds, op.Owner, op.Mode, op.Kind == "lapse"); i >= 0 {
			return []string{encode(without(holds, i))}
		}
		return []string{state}
	}
	panic("unknown operation " + op.Kind)
}

// lockModel is the object of one name; permits > 0 makes it a semaphore of that many permits.
// init is the set of states it may start in.
func lockModel(permits int, init []string) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} {
			out := make([]interface{}, len(init))
			for i, s := range init {
				out[i] = s
			}
			return out
		},
		Step: func(state, input, _ interface{}) []interface{} {
			var out []interface{}
			for _, s := range step(state.(string), input.(Op), permits) {
				out = append(out, s)
			}
			return out
		},
		DescribeOperation: func(input, _ interface{}) string { return describe(input.(Op)) },
		DescribeState:     describeState,
		Hash: func(state interface{}) uint64 {
			h := fnv.New64a()
			h.Write([]byte(state.(string)))
			return h.Sum64()
		},
	}
	return nm.ToModel()
}

func describe(op Op) string {
	return fmt.Sprintf("%s %s (%s)", op.Owner, op.Kind, op.Mode)
}

func describeState(state interface{}) string {
	if state.(string) == "" {
		return "free"
	}
	return "held by " + strings.ReplaceAll(state.(string), "\n", ", ")
}
