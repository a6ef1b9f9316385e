package rlock

// The C side of SetEventHandler. A file with an //export may declare but not define C
// functions in its preamble, so shim.h (static inline definitions) is not included here.

/*
#include <stdint.h>
#include <rlock/rlock.h>
*/
import "C"

import (
	"fmt"
	"os"
	"runtime/cgo"
	"time"
)

//export rlockGoEvent
func rlockGoEvent(ev *C.rlock_event, payload C.uintptr_t) {
	hook := cgo.Handle(payload).Value().(*eventHook)
	fn := hook.fn.Load()
	if fn == nil {
		return
	}
	e := Event{
		Kind:     EventKind(ev.kind),
		Time:     time.UnixMicro(int64(ev.unix_time_us)),
		Name:     goStringN(ev.name, ev.name_len),
		Owner:    goStringN(ev.owner, ev.owner_len),
		ThreadID: int64(ev.thread_id),
		Token:    int64(ev.token),
		Reason:   int(ev.reason),
		Detail:   goStringN(ev.detail, ev.detail_len),
	}
	switch e.Kind {
	case EventAcquired:
		e.Waited = time.Duration(ev.duration_us) * time.Microsecond
	case EventReleased:
		e.Held = time.Duration(ev.duration_us) * time.Microsecond
	}
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "rlock: the event handler panicked (event %v on %q): %v\n", e.Kind, e.Name, p)
		}
	}()
	(*fn)(e)
}

func goStringN(p *C.char, n C.size_t) string {
	if p == nil || n == 0 {
		return ""
	}
	return C.GoStringN(p, C.int(n))
}
