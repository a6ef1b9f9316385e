package rlock

/*
#include "shim.h"
*/
import "C"

// cDefaults returns what rlock_client_options_init and rlock_lock_options_init fill in, by C
// field name. The options of this package pass 0 for "the C default" and only name the values
// in their doc comments; header_tables_test.go checks those against this.
func cDefaults() map[string]int64 {
	var co C.rlock_client_options
	var lo C.rlock_lock_options
	if C.rlock_client_options_init(&co, C.RLOCK_CLIENT_OPTIONS_VERSION) != C.RLOCK_OK ||
		C.rlock_lock_options_init(&lo, C.RLOCK_LOCK_OPTIONS_VERSION) != C.RLOCK_OK {
		return nil
	}
	return map[string]int64{
		"connect_timeout_ms": int64(co.connect_timeout_ms),
		"command_timeout_ms": int64(co.command_timeout_ms),
		"pool_size":          int64(co.pool_size),
		"watchdog_lease_ms":  int64(co.watchdog_lease_ms),
		"poll_cap_ms":        int64(co.poll_cap_ms),
		"max_name_len":       int64(co.max_name_len),
		"spin_initial_ms":    int64(lo.spin_initial_ms),
		"spin_max_ms":        int64(lo.spin_max_ms),
		"fair_wait_ms":       int64(lo.fair_wait_ms),
	}
}
