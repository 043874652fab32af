package pgnotify_test

import (
	"context"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/pgnotify"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestListenerReconnects: notifications arrive; when the server ends the
// listening session (a restart, a failover, an idle-session killer) the
// listener reconnects, says so through OnConnect, and receives again. A
// short KeepAlive exercises the ping between notifications.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	url := storetest.URL(t, "postgres")
	db, err := store.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, connected := make(chan string, 16), make(chan struct{}, 4)
	l := &pgnotify.Listener{DSN: url, Channel: "test chan", KeepAlive: 100 * time.Millisecond,
		OnNotify: func(p string) { got <- p }, OnConnect: func() { connected <- struct{}{} }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	defer func() { cancel(); <-done }()

	expect := func(payload string) {
		t.Helper()
		select {
		case <-connected:
		case <-time.After(10 * time.Second):
			t.Fatal("the listener did not connect")
		}
		time.Sleep(300 * time.Millisecond) // a few keep-alive pings
		if err := db.RawExec(context.Background(), "SELECT pg_notify('test chan', ?)", payload); err != nil {
			t.Fatal(err)
		}
		select {
		case p := <-got:
			if p != payload {
				t.Fatalf("payload %q, want %q", p, payload)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("notification %q did not arrive", payload)
		}
	}
	expect("first")
	if !l.Listening() || !l.Fresh(time.Hour) {
		t.Fatal("Listening() or Fresh(an hour) is false while listening")
	}
	// End the listener's session from the server side.
	if err := db.RawExec(context.Background(),
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?",
		pgnotify.ApplicationName); err != nil {
		t.Fatal(err)
	}
	expect("after reconnect")
}

// TestListenerFresh: Fresh holds only within the given time of the last
// LISTEN or ping, and not at all once the listener stopped.
func TestListenerFresh(t *testing.T) {
	t.Parallel()
	url := storetest.URL(t, "postgres")
	connected := make(chan struct{}, 1)
	l := &pgnotify.Listener{DSN: url, Channel: "fresh", KeepAlive: time.Hour, OnConnect: func() { connected <- struct{}{} }}
	if l.Fresh(time.Hour) {
		t.Fatal("Fresh before listening")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not connect")
	}
	time.Sleep(100 * time.Millisecond)
	// No ping for an hour: the LISTEN, at least 100 ms ago, is the last proof.
	if l.Fresh(50*time.Millisecond) || !l.Fresh(time.Hour) {
		t.Fatalf("Fresh(50ms) %v, Fresh(1h) %v; want false, true", l.Fresh(50*time.Millisecond), l.Fresh(time.Hour))
	}
	cancel()
	<-done
	if l.Fresh(time.Hour) {
		t.Fatal("Fresh after the listener stopped")
	}
}
