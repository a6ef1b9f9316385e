package rlock

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The facts this package keeps of the C library match it: the status codes match rlock.h
// (parsed here), every code has a deliberate sentinel, and every default named in a doc comment
// is the C library's.

const headerPath = "../../capi/include/rlock/rlock.h"

// headerEnum returns NAME -> value for the items of `typedef enum <name> { ... } <name>;`.
func headerEnum(t *testing.T, name string) map[string]int {
	t.Helper()
	text, err := os.ReadFile(headerPath)
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)typedef enum ` + name + ` \{(.*?)\} ` + name + `;`).FindSubmatch(text)
	if body == nil {
		t.Fatalf("enum %s not found in %s", name, headerPath)
	}
	items := map[string]int{}
	for _, m := range regexp.MustCompile(`(RLOCK_\w+) = (-?\d+)`).FindAllSubmatch(body[1], -1) {
		v, _ := strconv.Atoi(string(m[2]))
		items[string(m[1])] = v
	}
	return items
}

func TestStatusCodesMatchTheHeader(t *testing.T) {
	header := headerEnum(t, "rlock_error_code")
	delete(header, "RLOCK_OK") // success is nil, not a Code
	ours := map[string]int{}
	for code, name := range codeNames {
		ours[name] = int(code)
	}
	for name, v := range header {
		if got, ok := ours[name]; !ok || got != v {
			t.Errorf("rlock.h has %s = %d; errors.go has %d (present: %v)", name, v, got, ok)
		}
	}
	for name, v := range ours {
		if _, ok := header[name]; !ok {
			t.Errorf("errors.go has %s = %d, which rlock.h does not", name, v)
		}
	}
}

// Codes that match no sentinel on purpose (use errors.As and read the message).
var withoutSentinel = map[Code]bool{CodeError: true, CodeUser: true}

func TestEveryCodeHasADeliberateSentinel(t *testing.T) {
	for code, name := range codeNames {
		if _, ok := sentinels[code]; ok == withoutSentinel[code] {
			t.Errorf("%s: give it sentinels in errors.go, or list it in withoutSentinel", name)
		}
	}
}

// Which option's doc comment names which C defaults, in order.
var documentedDefaults = map[string][]string{
	"WithConnectTimeout":    {"connect_timeout_ms"},
	"WithCommandTimeout":    {"command_timeout_ms"},
	"WithPoolSize":          {"pool_size"},
	"WithWatchdogLease":     {"watchdog_lease_ms"},
	"WithPollCap":           {"poll_cap_ms"},
	"WithMaxNameLen":        {"max_name_len"},
	"WithSpinBackoff":       {"spin_initial_ms", "spin_max_ms"},
	"WithFairWaiterTimeout": {"fair_wait_ms"},
}

// TestDocumentedDefaults checks every "WithX ... (default V)" or "(defaults V and W)" in the
// package's sources: durations in Go syntax for the _ms fields, plain numbers otherwise.
func TestDocumentedDefaults(t *testing.T) {
	c := cDefaults()
	if c == nil {
		t.Fatal("rlock_*_options_init failed")
	}
	files, _ := filepath.Glob("*.go")
	mention := regexp.MustCompile(`(With\w+)\b[^()]*?\(defaults? ([^,)]*)`)
	seen := map[string]bool{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mention.FindAllStringSubmatch(string(text), -1) {
			option, values := m[1], strings.Split(m[2], " and ")
			fields, ok := documentedDefaults[option]
			if !ok || len(fields) != len(values) {
				t.Errorf("%s: %q: add %s to documentedDefaults", file, m[0], option)
				continue
			}
			seen[option] = true
			for i, field := range fields {
				if got := parseDefault(t, values[i], field); got != c[field] {
					t.Errorf("%s: %s documents %s as %q, the C default is %d", file, option,
						field, values[i], c[field])
				}
			}
		}
	}
	for option := range documentedDefaults {
		if !seen[option] {
			t.Errorf("%s no longer states its default: drop it from documentedDefaults", option)
		}
	}
}

func parseDefault(t *testing.T, text, field string) int64 {
	if strings.HasSuffix(field, "_ms") {
		d, err := time.ParseDuration(text)
		if err != nil {
			t.Errorf("%s: %v", field, err)
		}
		return d.Milliseconds()
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		t.Errorf("%s: %v", field, err)
	}
	return n
}

func TestDefaultURLIsTheCDefaultAddress(t *testing.T) {
	text, err := os.ReadFile(headerPath)
	if err != nil {
		t.Fatal(err)
	}
	host := regexp.MustCompile(`host;\s*/\* default "([^"]+)" \*/`).FindSubmatch(text)
	port := regexp.MustCompile(`port;\s*/\* default (\d+) \*/`).FindSubmatch(text)
	if host == nil || port == nil {
		t.Fatal("rlock.h documents no default host and port")
	}
	if want := "redis://" + string(host[1]) + ":" + string(port[1]); DefaultURL != want {
		t.Errorf("DefaultURL is %q, rlock.h's default address is %q", DefaultURL, want)
	}
}

func TestEventKindsMatchTheHeader(t *testing.T) {
	header := headerEnum(t, "rlock_event_kind")
	ours := map[string]EventKind{"RLOCK_EVENT_ACQUIRED": EventAcquired, "RLOCK_EVENT_RELEASED": EventReleased,
		"RLOCK_EVENT_LOST": EventLost, "RLOCK_EVENT_RENEWAL_FAILED": EventRenewalFailed,
		"RLOCK_EVENT_FAILOVER": EventFailover, "RLOCK_EVENT_REDIRECT": EventRedirect,
		"RLOCK_EVENT_KEY_EXPIRED": EventKeyExpired, "RLOCK_EVENT_KEY_DELETED": EventKeyDeleted,
		"RLOCK_EVENT_ELECTED": EventElected, "RLOCK_EVENT_REVOKED": EventRevoked}
	if len(header) != len(ours) {
		t.Errorf("rlock.h has %d event kinds, events.go %d: %v", len(header), len(ours), header)
	}
	for name, v := range header {
		if k, ok := ours[name]; !ok || int(k) != v {
			t.Errorf("rlock.h has %s = %d; events.go has %d (present: %v)", name, v, int(k), ok)
		}
		if k := EventKind(v); strings.HasPrefix(k.String(), "EventKind(") ||
			"RLOCK_EVENT_"+strings.ToUpper(k.String()) != name {
			t.Errorf("%s: String() is %q", name, k.String())
		}
	}
}

// Every status code fits the C array of failures by code, which Stats reads.
func TestCodesFitTheStatsArray(t *testing.T) {
	for code, name := range codeNames {
		if -int(code) >= cStatsCodes {
			t.Errorf("%s (%d) is beyond RLOCK_STATS_CODES (%d)", name, code, cStatsCodes)
		}
	}
}

func TestRevokeReasonsMatchTheHeader(t *testing.T) {
	header := headerEnum(t, "rlock_revoke_reason")
	ours := map[string]RevokeReason{"RLOCK_REVOKED_GONE": RevokedGone,
		"RLOCK_REVOKED_UNREACHABLE": RevokedUnreachable, "RLOCK_REVOKED_RESIGNED": RevokedResigned,
		"RLOCK_REVOKED_CLOSED": RevokedClosed, "RLOCK_REVOKED_FAILED": RevokedFailed}
	if len(header) != len(ours) {
		t.Errorf("rlock.h has %d revoke reasons, election.go %d: %v", len(header), len(ours), header)
	}
	for name, v := range header {
		if r, ok := ours[name]; !ok || int(r) != v {
			t.Errorf("rlock.h has %s = %d; election.go has %d (present: %v)", name, v, int(r), ok)
		}
		if "RLOCK_REVOKED_"+strings.ToUpper(RevokeReason(v).String()) != name {
			t.Errorf("%s: String() is %q", name, RevokeReason(v).String())
		}
	}
}
