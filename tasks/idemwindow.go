package tasks

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// IdemOff is the Caller.IdemWindow that turns deduplication by messageId
// off: every send is a new message.
const IdemOff time.Duration = -1

// windowed is key as the window w of the caller stores it (see
// Caller.IdemWindow). The store keeps idempotency keys as long as their
// task; a window is made of that by qualifying the messageId it binds:
//   - off: with a fresh id, so that no send finds another's key;
//   - w > 0: with the number of the period of length w the send falls
//     in. A send binds the key of its period, unless the key of the
//     period before is bound already: then it is that message again. A
//     messageId is so remembered at least w and less than 2w after it was
//     first sent, at the cost of one more read per send.
//
// The messageId the sender chose stays key.sent: the call's idempotency
// key is built from it (see callOf), as recovery builds it again.
func (in *incoming) windowed(ctx context.Context, w time.Duration, key IdemKey) (IdemKey, error) {
	s := in.s
	if w == 0 {
		return key, nil
	}
	key.sent = key.MessageID
	if w < 0 {
		key.MessageID += "\x00" + newID()
		return key, nil
	}
	period := s.cfg.Now().UnixNano() / int64(w)
	prev := key
	prev.MessageID = windowID(key.sent, w, period-1)
	switch _, err := s.store.Lookup(ctx, prev); {
	case err == nil, errors.Is(err, ErrMessageIDReused):
		return prev, nil // the store answers the resend as it always has
	case !errors.Is(err, ErrNotFound):
		return key, err
	}
	key.MessageID = windowID(key.sent, w, period)
	return key, nil
}

// windowID is the key of messageId id in period n of windows of length
// w: the window is part of it, so that periods of another window (after
// a change of setting) never meet.
func windowID(id string, w time.Duration, n int64) string {
	return id + "\x00" + w.String() + "@" + strconv.FormatInt(n, 10)
}

// messageID is the messageId the sender chose.
func (k *IdemKey) messageID() string {
	if k.sent != "" {
		return k.sent
	}
	return k.MessageID
}
