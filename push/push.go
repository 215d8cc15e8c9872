package push

import (
	"context"
	"time"
)

// Auth is how a webhook wants a2ad to authenticate: the first scheme of
// Schemes with Credentials, sent as "Authorization: <scheme> <credentials>".
type Auth struct {
	Schemes     []string
	Credentials string
}

// Delivery is one notification to send: a POST of Body to URL.
type Delivery struct {
	// ID orders deliveries: for one (TaskID, ConfigID), a lower ID is
	// sent first.
	ID       uint64
	TaskID   string
	ConfigID string
	URL      string
	// Token goes in X-A2A-Notification-Token when not empty.
	Token string
	Auth  *Auth
	// Body is the JSON to POST (the Task, for 0.3 configs; a
	// StreamResponse, for 1.0 ones).
	Body []byte
	// ContentType is the body's media type; "" means application/json.
	ContentType string
	// Attempts made so far.
	Attempts int
	// NextAt is when the next attempt is due.
	NextAt    time.Time
	LastError string
}

// Outbox is what the sender needs of the durable outbox. Every method
// commits before it returns.
type Outbox interface {
	// Due returns up to limit deliveries whose NextAt is not after now,
	// at most one per (TaskID, ConfigID): the one with the lowest ID, and
	// only if it is due (a later one waits for it, to keep order).
	Due(ctx context.Context, now time.Time, limit int) ([]Delivery, error)
	// Delivered removes delivery id.
	Delivered(ctx context.Context, id uint64) error
	// Retry records a failed attempt of delivery id and when to try next.
	Retry(ctx context.Context, id uint64, attempts int, next time.Time, lastErr string) error
	// Dead moves delivery id to the dead-letter list.
	Dead(ctx context.Context, id uint64, attempts int, lastErr string) error
}
