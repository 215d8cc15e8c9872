package push

import (
	"errors"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/tasks"
)

// ErrGone is returned by Outbox.Request when a delivery has nothing left
// to deliver (tasks.ErrDeliveryGone).
var ErrGone = tasks.ErrDeliveryGone

// Auth is how a webhook wants a2ad to authenticate (tasks.WebhookAuth).
type Auth = tasks.WebhookAuth

// Delivery is one notification to send (tasks.Delivery): the outbox,
// which the store keeps, hands it out and fills it in; the sender encodes
// its body and POSTs it.
type Delivery = tasks.Delivery

// DeliveryIDHeader carries Delivery.DeliveryID on every POST, so that a
// receiver can drop the copies that at-least-once delivery may send.
const DeliveryIDHeader = "A2AD-Delivery-Id"

// requestBody returns the JSON to POST for d and its media type: the Task for a
// 0.3 webhook (application/json), a StreamResponse {"task": ...} for a
// 1.0 one (application/a2a+json).
func requestBody(d *Delivery) (body []byte, contentType string, err error) {
	if d.Task == nil {
		return nil, "", errors.New("delivery has no task")
	}
	if d.Wire == a2a.V10 {
		body, err = (&v1.StreamResponse{Task: d.Task}).AppendJSON(nil)
		return body, "application/a2a+json", err
	}
	body, err = v03.AppendTask(nil, d.Task)
	return body, "application/json", err
}

// Outbox is what the sender needs of the durable outbox: the outbox part
// of tasks.Backend, which every store keeps (see tasks.Outbox for its
// contract).
type Outbox = tasks.Outbox

// Claims is an Outbox that processes share (tasks.Claims): the sender
// renews its claims on the deliveries it is sending at least every
// PollInterval, whether or not it has a slot free to call Due.
type Claims = tasks.Claims
