package callers

// lru is a map whose entries are kept in order of use, the most recently
// used first, so that the least recently used one is found in O(1). It
// does not evict by itself: its owner decides what may be forgotten. It is
// not safe for concurrent use.
type lru[V any] struct {
	m          map[string]*lruEntry[V]
	head, tail *lruEntry[V] // head: most recently used
}

type lruEntry[V any] struct {
	key        string
	val        V
	prev, next *lruEntry[V]
}

func newLRU[V any]() lru[V] { return lru[V]{m: make(map[string]*lruEntry[V])} }

func (l *lru[V]) len() int { return len(l.m) }

// get returns key's value and marks it used, or nil.
func (l *lru[V]) get(key string) *V {
	e, ok := l.m[key]
	if !ok {
		return nil
	}
	l.unlink(e)
	l.pushFront(e)
	return &e.val
}

// add stores v under key, which must not be present, as the most recently
// used entry.
func (l *lru[V]) add(key string, v V) *V {
	e := &lruEntry[V]{key: key, val: v}
	l.m[key] = e
	l.pushFront(e)
	return &e.val
}

// oldest returns the least recently used entry, or nil.
func (l *lru[V]) oldest() *lruEntry[V] { return l.tail }

// remove forgets e.
func (l *lru[V]) remove(e *lruEntry[V]) {
	l.unlink(e)
	delete(l.m, e.key)
}

func (l *lru[V]) pushFront(e *lruEntry[V]) {
	e.prev, e.next = nil, l.head
	if l.head != nil {
		l.head.prev = e
	}
	l.head = e
	if l.tail == nil {
		l.tail = e
	}
}

func (l *lru[V]) unlink(e *lruEntry[V]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
