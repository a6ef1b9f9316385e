package rlock

/*
#include <stdint.h>
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"sync/atomic"
)

// LostReason says why a held lock was lost.
type LostReason int

const (
	LostGone        LostReason = 1 // a renewal found the key deleted or held by someone else
	LostUnreachable LostReason = 2 // Redis could not be reached before the lease ran out
	LostExpired     LostReason = 3 // an explicit lease (WithLease, TryLock's lease) ran out
)

func (r LostReason) String() string {
	switch r {
	case LostGone:
		return "gone"
	case LostUnreachable:
		return "unreachable"
	case LostExpired:
		return "expired"
	}
	return fmt.Sprintf("LostReason(%d)", int(r))
}

// lostHook is the payload C holds (through a cgo.Handle) for a Lock's lost callback. It does
// not point back to the Lock, so the handle does not keep the Lock alive.
type lostHook struct {
	fn atomic.Pointer[func(LostReason)]
}

//export rlockGoLost
func rlockGoLost(reason C.int, payload C.uintptr_t) {
	// Runs on the client's watchdog thread, which also renews other locks: the user's function
	// gets its own goroutine.
	hook := cgo.Handle(payload).Value().(*lostHook)
	if fn := hook.fn.Load(); fn != nil {
		go (*fn)(LostReason(reason))
	}
}
