package tasks

import "sync"

// Broker fans a task's committed events out to its subscribers. Publish
// never blocks: a subscriber whose buffer is full is dropped (its channel
// is closed) and must read the store to catch up.
type Broker struct {
	mu   sync.Mutex
	subs map[string]map[*Subscription]struct{}
	// seen, when set (a shared store's relay), is told of the last
	// sequence of each Publish.
	seen func(taskID string, last uint64)
}

// Subscription receives the events of one task.
type Subscription struct {
	// C delivers events; it is closed when the subscriber is dropped or
	// unsubscribed.
	C      chan Event
	taskID string
	closed bool
}

// NewBroker returns an empty broker.
func NewBroker() *Broker {
	return &Broker{subs: make(map[string]map[*Subscription]struct{})}
}

// Subscribe starts delivering taskID's events, with room for buf of them.
func (b *Broker) Subscribe(taskID string, buf int) *Subscription {
	s := &Subscription{C: make(chan Event, buf), taskID: taskID}
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.subs[taskID]
	if m == nil {
		m = make(map[*Subscription]struct{})
		b.subs[taskID] = m
	}
	m[s] = struct{}{}
	return s
}

// Unsubscribe stops s. It is safe to call more than once.
func (b *Broker) Unsubscribe(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.remove(s)
}

func (b *Broker) remove(s *Subscription) {
	if s.closed {
		return
	}
	s.closed = true
	close(s.C)
	if m := b.subs[s.taskID]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(b.subs, s.taskID)
		}
	}
}

// Publish delivers events to taskID's subscribers.
func (b *Broker) Publish(taskID string, events []Event) {
	if len(events) == 0 {
		return
	}
	b.mu.Lock()
	for s := range b.subs[taskID] {
		for _, e := range events {
			select {
			case s.C <- e:
			default:
				b.remove(s)
			}
			if s.closed {
				break
			}
		}
	}
	b.mu.Unlock()
	if b.seen != nil {
		b.seen(taskID, events[len(events)-1].Seq)
	}
}
