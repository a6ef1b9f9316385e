package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	rlock "github.com/rlock/rlock/bindings/go"
)

func Example() {
	client, err := rlock.NewClient("") // $RLOCK_URL, else redis://127.0.0.1:6379
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	lock, err := client.Lock("stock:42")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()

	ok, err := lock.TryLock(context.Background(), 5*time.Second, 0)
	switch {
	case err != nil:
		fmt.Println(err)
	case !ok:
		fmt.Println("busy, try later")
	default:
		defer lock.Unlock()
		// ... the critical section ...
	}
}

func ExampleLock_Lock() {
	client, err := rlock.NewClient("")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	lock, err := client.Lock("nightly-report")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := lock.Lock(ctx); errors.Is(err, rlock.ErrNotObtained) {
		fmt.Println("someone else is making the report")
		return
	} else if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Unlock()
	// ... the critical section ...
}

func ExampleWithTLS() {
	// The same as rediss://redis.example.com:6380?tls_ca_file=/etc/rlock/ca.crt&tls_cert_file=...
	client, err := rlock.NewClient("rediss://redis.example.com:6380", rlock.WithTLS(rlock.TLSOptions{
		CAFile:   "/etc/rlock/ca.crt", // unset: the system's trust store
		CertFile: "/etc/rlock/client.crt",
		KeyFile:  "/etc/rlock/client.key",
	}))
	if errors.Is(err, rlock.ErrTLS) {
		fmt.Println("TLS failed:", err) // OpenSSL's reason, such as a host name mismatch
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
}

func ExampleClient_Stats() {
	client, err := rlock.NewClient("")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	s, err := client.Stats()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("granted %d, timed out %d, lost %d, holding %d\n", s.AcquiresGranted,
		s.AcquiresTimedOut, s.LocksLostGone+s.LocksLostUnreachable+s.LocksLostExpired, s.Holds)
	if s.AcquireWait.Count > 0 {
		fmt.Println("mean wait:", s.AcquireWait.Sum/time.Duration(s.AcquireWait.Count))
	}
}

func ExampleClient_SetEventHandler() {
	client, err := rlock.NewClient("")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	// Called in order on one library thread: keep it quick.
	err = client.SetEventHandler(func(e rlock.Event) {
		switch e.Kind {
		case rlock.EventAcquired:
			fmt.Printf("%s acquired %q after %v (token %d)\n", e.Owner, e.Name, e.Waited, e.Token)
		case rlock.EventReleased:
			fmt.Printf("%s released %q, held %v\n", e.Owner, e.Name, e.Held)
		case rlock.EventLost:
			fmt.Printf("%s lost %q: %v\n", e.Owner, e.Name, e.LostReason())
		}
	})
	if err != nil {
		fmt.Println(err)
	}
}
