package main

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

func op(owner, kind, mode string, call, ret int64) Op {
	return Op{Owner: owner, Kind: kind, Mode: mode, Call: call, Return: ret}
}

// verdict checks ops both on their own intervals and reduced: the two must agree.
func verdict(t *testing.T, permits int, ops ...Op) Verdict {
	t.Helper()
	exact := Check(object{Name: "t", Permits: permits, Ops: ops}, 0, true)
	reduced := Check(object{Name: "t", Permits: permits, Ops: ops}, 0, false)
	if exact.Result != reduced.Result {
		t.Fatalf("exact %s, reduced %s", exact.Result, reduced.Result)
	}
	return reduced
}

func TestOneHolderAfterAnotherIsLegal(t *testing.T) {
	v := verdict(t, 0,
		op("a", "acquire", "X", 0, 10), op("a", "release", "X", 20, 30),
		// b's acquire returned while a's release was in flight: it took effect first.
		op("b", "acquire", "X", 5, 25), op("b", "release", "X", 40, 50))
	if v.Result != porcupine.Ok {
		t.Fatalf("got %s: %s", v.Result, v.Why)
	}
}

func TestTwoHoldersAtOnceAreIllegal(t *testing.T) {
	v := verdict(t, 0,
		op("a", "acquire", "X", 0, 10), op("a", "release", "X", 40, 50),
		op("b", "acquire", "X", 15, 20), op("b", "release", "X", 30, 35))
	if v.Result != porcupine.Illegal {
		t.Fatalf("got %s", v.Result)
	}
	if !strings.Contains(v.Why, "b acquire (X)") || !strings.Contains(v.Why, "held by a X") {
		t.Fatalf("explanation names neither the late acquire nor the holder: %s", v.Why)
	}
}

func TestReadersShareAWriterDoesNot(t *testing.T) {
	readers := []Op{
		op("a", "acquire", "R", 0, 10), op("a", "release", "R", 40, 50),
		op("b", "acquire", "R", 15, 20), op("b", "release", "R", 30, 35),
	}
	if v := verdict(t, 0, readers...); v.Result != porcupine.Ok {
		t.Fatalf("two readers: got %s: %s", v.Result, v.Why)
	}
	writer := append(append([]Op{}, readers...), op("c", "acquire", "W", 12, 25))
	if v := verdict(t, 0, writer...); v.Result != porcupine.Illegal {
		t.Fatalf("a writer among readers: got %s", v.Result)
	}
}

func TestSemaphoreCountsPermits(t *testing.T) {
	three := []Op{
		op("a", "acquire", "S", 0, 10), op("a", "release", "S", 40, 50),
		op("b", "acquire", "S", 0, 10), op("b", "release", "S", 40, 50),
		op("c", "acquire", "S", 0, 10), op("c", "release", "S", 40, 50),
	}
	if v := verdict(t, 3, three...); v.Result != porcupine.Ok {
		t.Fatalf("3 of 3 permits: got %s: %s", v.Result, v.Why)
	}
	if v := verdict(t, 2, three...); v.Result != porcupine.Illegal {
		t.Fatalf("3 owners in 2 permits: got %s", v.Result)
	}
}

func TestAnEndedSectionFreesTheLock(t *testing.T) {
	// a was killed at 20 (or its release failed): b may enter after that, not before.
	after := []Op{op("a", "acquire", "X", 0, 10), op("a", "end", "X", 20, 20),
		op("b", "acquire", "X", 15, 25)}
	if v := verdict(t, 0, after...); v.Result != porcupine.Ok {
		t.Fatalf("got %s: %s", v.Result, v.Why)
	}
	before := []Op{op("a", "acquire", "X", 0, 10), op("a", "end", "X", 20, 20),
		op("b", "acquire", "X", 12, 18)}
	if v := verdict(t, 0, before...); v.Result != porcupine.Illegal {
		t.Fatalf("got %s", v.Result)
	}
}

func TestAnUnknownAcquireMayHaveHappened(t *testing.T) {
	// a's acquire failed with no reply; its release then returned ok: legal only if the
	// acquire took effect.
	ops := []Op{op("a", "acquire?", "X", 0, -1), op("a", "lapse", "X", 0, -1),
		op("a", "release", "X", 20, 30)}
	if v := verdict(t, 0, ops...); v.Result != porcupine.Ok {
		t.Fatalf("got %s: %s", v.Result, v.Why)
	}
	// ... and need not have: b's grant is legal too (the ghost lapsed, or never was).
	ops = []Op{op("a", "acquire?", "X", 0, -1), op("a", "lapse", "X", 0, -1),
		op("b", "acquire", "X", 5, 10), op("b", "release", "X", 20, 30)}
	if v := verdict(t, 0, ops...); v.Result != porcupine.Ok {
		t.Fatalf("got %s: %s", v.Result, v.Why)
	}
	// A release that returned ok with no acquire that could explain it is illegal.
	if v := verdict(t, 0, op("a", "release", "X", 20, 30)); v.Result != porcupine.Illegal {
		t.Fatalf("got %s", v.Result)
	}
}

// A long history is checked in chunks: a hold taken in the first chunk and never released
// still keeps a writer out in the last.
func TestChunksCarryTheHoldsAcross(t *testing.T) {
	var readers []Op
	for i := int64(0); i < 3*chunkOps; i++ {
		owner := []string{"a", "b"}[i%2]
		readers = append(readers, op(owner, "acquire", "R", 100+100*i, 100*i+110),
			op(owner, "release", "R", 100*i+150, 100*i+160))
	}
	end := int64(100 + 100*3*chunkOps)
	writer := op("d", "acquire", "W", end, end+5)
	ops := append(append([]Op{}, readers...), writer)
	if v := Check(object{Name: "t", Ops: ops}, 0, false); v.Result != porcupine.Ok {
		t.Fatalf("got %s: %s", v.Result, v.Why)
	}
	ops = append(ops, op("c", "acquire", "R", 20, 30))
	if v := Check(object{Name: "t", Ops: ops}, 0, false); v.Result != porcupine.Illegal {
		t.Fatalf("got %s", v.Result)
	}
}

func TestAGrantAppliedLateExplainsALaterRelease(t *testing.T) {
	// a's acquire got no reply and reached the server only while a's release was in flight:
	// the release, returning ok, took the late grant back.
	ops := []Op{op("a", "acquire?", "X", 0, -1), op("a", "lapse", "X", 0, -1),
		op("b", "acquire", "X", 5, 10), op("b", "release", "X", 20, 25),
		op("a", "release", "X", 15, 30)}
	if v := verdict(t, 0, ops...); v.Result != porcupine.Ok {
		t.Fatalf("got %s: %s", v.Result, v.Why)
	}
}
