package rlock

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkLockUnlock is the uncontended pair of bench/ (scenario 1) as a Go benchmark, for
// profiling the binding's own cost per call: go test -run - -bench LockUnlock -benchmem.
func BenchmarkLockUnlock(b *testing.B) {
	c, err := NewClient(redis.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	locks := make([]*Lock, 64)
	for i := range locks {
		if locks[i], err = c.Lock(fmt.Sprintf("go:bench:%d", i)); err != nil {
			b.Fatal(err)
		}
		defer locks[i].Close()
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l := locks[i%len(locks)]
		if err := l.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(); err != nil {
			b.Fatal(err)
		}
	}
}
