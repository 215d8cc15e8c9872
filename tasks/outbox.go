package tasks

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

// ErrDeliveryGone is returned by Outbox.Request when a delivery has
// nothing left to deliver: its task is gone (expired) or no longer has
// the webhook. The outbox has dropped the delivery by then.
var ErrDeliveryGone = errors.New("push delivery gone: its task or webhook no longer exists")

// WebhookAuth is how a webhook wants a2ad to authenticate: the first
// scheme of Schemes with Credentials, sent as "Authorization: <scheme>
// <credentials>".
type WebhookAuth struct {
	Schemes     []string
	Credentials string
}

// Delivery is one push notification to send: a POST of Task, in the
// webhook's protocol version, to URL. Outbox.Due fills in what identifies
// and schedules it; Outbox.Request fills in the request, from the task as
// it stands when it is sent. The sender encodes the body, so that an
// outbox stores and reads tasks, never wire JSON.
type Delivery struct {
	// ID orders deliveries: for one (TaskID, ConfigID), a lower ID is
	// sent first.
	ID       uint64
	TaskID   string
	ConfigID string
	// Attempts made so far.
	Attempts int
	// NextAt is when the next attempt is due.
	NextAt    time.Time
	LastError string

	// Set by Request.
	URL string
	// Token goes in X-A2A-Notification-Token when not empty.
	Token string
	Auth  *WebhookAuth
	// Task is the task as it stands, to report.
	Task *a2a.Task
	// Wire is the protocol version the webhook was set with.
	Wire a2a.Version
	// Seq is the task's event sequence that Task reports.
	Seq uint64
}

// DeliveryID names what d notifies: its task, its webhook and the task's
// event sequence that the body reports, "<task id>:<config id>:<seq>".
// It is read from stored data, never from the attempt, so every attempt
// and every replica sending the same state sends the same value, and a
// newer state (a transition folded into a waiting delivery) a new one.
func (d *Delivery) DeliveryID() string {
	return d.TaskID + ":" + d.ConfigID + ":" + strconv.FormatUint(d.Seq, 10)
}

// Fill fills in d's request, a notification of task at event sequence
// seq to d's webhook among cfgs, as that webhook was set: its URL, Token,
// Auth and Wire. It reports false if cfgs has no webhook d.ConfigID.
func (d *Delivery) Fill(cfgs []a2a.PushConfig, task *a2a.Task, seq uint64) bool {
	for i := range cfgs {
		if c := &cfgs[i]; c.ID == d.ConfigID {
			d.URL, d.Token, d.Auth, d.Task, d.Wire, d.Seq = c.URL, c.Token, nil, task, c.Wire, seq
			if a := c.Authentication; a != nil {
				d.Auth = &WebhookAuth{Schemes: a.Schemes, Credentials: a.Credentials}
			}
			return true
		}
	}
	return false
}

// Outbox is the push outbox a Backend keeps beside its tasks, which the
// transitions that notify a webhook fill in the same commit, and which
// the push sender drains. Every method that changes it commits before it
// returns; a delivery that is no longer there (delivered, dead-lettered
// or dropped meanwhile) is no error.
type Outbox interface {
	// Due returns up to limit deliveries whose NextAt is not after now,
	// oldest NextAt first, at most one per (TaskID, ConfigID): the one
	// with the lowest ID, and only if it is due (a later one waits for
	// it, to keep order). It fills in only ID, TaskID, ConfigID,
	// Attempts, NextAt and LastError, and its cost is bounded by limit,
	// not by the outbox's size.
	Due(ctx context.Context, now time.Time, limit int) ([]Delivery, error)
	// Request fills in d's URL, Token, Auth, Task, Wire and Seq
	// from its task and webhook as they stand now. It returns
	// ErrDeliveryGone, having dropped the delivery, if the task or its
	// webhook is gone.
	Request(ctx context.Context, d *Delivery) error
	// Delivered records that delivery id reached its webhook with the
	// task at sequence seq: it is removed, unless the outbox holds a
	// later transition of the task for the same webhook.
	Delivered(ctx context.Context, id, seq uint64) error
	// Retry records a failed attempt of delivery id and when to try next.
	Retry(ctx context.Context, id uint64, attempts int, next time.Time, lastErr string) error
	// Dead moves delivery id to the dead-letter list; url is the webhook
	// it was sent to ("" if its request could not be built).
	Dead(ctx context.Context, id uint64, url string, attempts int, lastErr string) error
}

// Claims is an Outbox that processes share: its Due claims what it hands
// out for a while, so that no other process sends it meanwhile. The
// sender renews its claims on the deliveries it is sending at least
// every poll interval, whether or not it has a slot free to call Due.
type Claims interface {
	// Renew extends this process's claims on the deliveries ids; a
	// delivery no longer there, or no longer its, is no error.
	Renew(ctx context.Context, ids []uint64) error
}
