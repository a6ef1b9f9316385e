package rlockgocron_test

import (
	"log"
	"time"

	"github.com/go-co-op/gocron/v2"
	rlock "github.com/rlock/rlock/bindings/go"
	rlockgocron "github.com/rlock/rlock/bindings/go/gocron"
)

// Every scheduler of the group runs this; each tick of "report" runs in one of them.
func ExampleNewLocker() {
	client, err := rlock.NewClient("redis://localhost:6379")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	locker, err := rlockgocron.NewLocker(client, rlockgocron.WithMinHold(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Shutdown()
	_, err = s.NewJob(gocron.DurationJob(time.Minute), gocron.NewTask(func() { log.Print("report") }),
		gocron.WithName("report")) // the lock is gocron:report in every scheduler
	if err != nil {
		log.Fatal(err)
	}
	s.Start()
}

// Every scheduler of the group runs this; only the leader's jobs run.
func ExampleNewElector() {
	client, err := rlock.NewClient("redis://localhost:6379")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	elector, err := rlockgocron.NewElector(client, "reports") // the lock gocron:reports
	if err != nil {
		log.Fatal(err)
	}
	defer elector.Close() // resigns: another scheduler takes over at once
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(elector))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Shutdown()
	_, err = s.NewJob(gocron.DurationJob(time.Minute), gocron.NewTask(func() { log.Print("report") }))
	if err != nil {
		log.Fatal(err)
	}
	s.Start()
}
