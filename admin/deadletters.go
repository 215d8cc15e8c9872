package admin

// The operator's replay of push dead letters, once the receiver is fixed:
//
//	POST   /admin/v1/dead-letters/{id}/retry
//	DELETE /admin/v1/dead-letters/{id}
//
// Both answer the dead letter as it was; each is in the audit trail.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/tasks"
)

// DeadLetterOutbox is what the replay changes of the push outbox: the
// tasks.Replay part of tasks.Backend.
type DeadLetterOutbox = tasks.Replay

// deadLetter is d as every route answers it, its times in UTC.
func deadLetter(d tasks.DeadLetter) DeadLetter {
	d.CreatedAt, d.DeadAt = d.CreatedAt.UTC(), d.DeadAt.UTC()
	return DeadLetter(d)
}

// deadLetterOps serves the replay.
type deadLetterOps struct {
	view  *opView
	store DeadLetterOutbox
	log   zerolog.Logger
	audit *zerolog.Logger // nil: no audit trail
}

func (o *deadLetterOps) retry(c echo.Context) error {
	return o.do(c, "dead-letters/retry", func(ctx context.Context, id uint64) (tasks.DeadLetter, error) {
		return o.store.RetryDeadLetter(ctx, id, o.view.now())
	})
}

func (o *deadLetterOps) drop(c echo.Context) error {
	return o.do(c, "dead-letters/delete", o.store.DropDeadLetter)
}

// do runs action on the dead letter the path names, audits it, and
// answers the letter as it was.
func (o *deadLetterOps) do(c echo.Context, action string, fn func(context.Context, uint64) (tasks.DeadLetter, error)) error {
	v := o.view
	raw := c.Param("id")
	id, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || id == 0 {
		return v.reply(c, nil, badRequest("the dead letter id in the path must be a positive integer, not %q", raw))
	}
	if err := checkParams(c.QueryParams()); err != nil {
		return v.reply(c, nil, err)
	}
	d, err := fn(c.Request().Context(), id)
	switch {
	case errors.Is(err, tasks.ErrDeadLetterNotFound):
		o.record(c, action, id, "", audit.OutcomeClientError, audit.ReasonNotFound)
		return v.reply(c, nil, &apiError{http.StatusNotFound, fmt.Sprintf("no dead letter has id %d", id)})
	case err != nil:
		o.record(c, action, id, "", audit.OutcomeServerError, audit.ReasonInternalError)
		return v.reply(c, nil, err)
	}
	o.record(c, action, id, d.TaskID, audit.OutcomeOK, audit.ReasonOK)
	o.log.Info().Str("action", action).Uint64("dead_letter_id", id).Str("task_id", d.TaskID).Msg("dead letter handled by the operator")
	return v.reply(c, deadLetter(d), nil)
}

// record writes the operator action's audit record: ids and outcome only
// (never the webhook's URL).
func (o *deadLetterOps) record(c echo.Context, action string, id uint64, taskID string, outcome audit.Outcome, reason audit.Reason) {
	if o.audit == nil {
		return
	}
	o.audit.Log().
		Bool("operator", true).
		Str("action", action).
		Uint64("dead_letter_id", id).
		Str("task_id", taskID).
		Str("outcome", string(outcome)).
		Str("reason", string(reason)).
		Str("remote_addr", c.Request().RemoteAddr).
		Msg("operator action")
}
