package tasks

import (
	"context"
	"testing"
)

func TestBusClose(t *testing.T) {
	b := NewBus(1)
	ch, cancel := b.Subscribe(context.Background())
	b.Publish(context.Background(), "a")
	b.Publish(context.Background(), "b") // no room: dropped
	if got := <-ch; got != "a" || b.Dropped() != 1 {
		t.Fatalf("got %q, dropped %d", got, b.Dropped())
	}
	b.Close()
	if _, ok := <-ch; ok {
		t.Fatal("Close must end the subscription")
	}
	cancel() // after Close: no double close
	late, _ := b.Subscribe(context.Background())
	if _, ok := <-late; ok {
		t.Fatal("a subscription after Close must be closed at once")
	}
	b.Publish(context.Background(), "c") // nobody left: no panic
}
