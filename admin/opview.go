package admin

// The operator view: read-only JSON endpoints on the admin listener
// (loopback callers only, as every admin route), and the one write the
// CLI needs, an operator's cancel.
//
//	GET  /admin/v1/overview
//	GET  /admin/v1/tasks?state=&function=&caller=&limit=&page_token=
//	GET  /admin/v1/tasks/{id}
//	GET  /admin/v1/dead-letters?limit=&page_token=
//	POST /admin/v1/tasks/{id}/cancel
//
// and the replay of dead letters (deadletters.go).
//
// The JSON types are in view.go.

import (
	"context"
	"encoding/base64"
	be "encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// The operator view's paging: limit is 1..maxPageLimit, defaultPageLimit
// when not given.
const (
	defaultPageLimit = 100
	maxPageLimit     = 1000
)

// opView serves the read-only endpoints. It holds no component that can
// change a task, a timer or a rate bucket: observation only, by
// construction.
type opView struct {
	store           tasks.Inspector
	stateCountLimit int
	catalog         func() *functions.Catalog
	policy          exposure.Policy
	keys            func() *int
	storePath       string
	version         string
	startedAt       time.Time
	now             func() time.Time
	log             zerolog.Logger
}

// opCancel serves the operator's cancel.
type opCancel struct {
	view  *opView
	tasks Canceler
	log   zerolog.Logger
	audit *zerolog.Logger // nil: no audit trail
}

// addOpViewRoutes adds the operator view.
func (s *Server) addOpViewRoutes(e *echo.Echo) {
	cfg := s.cfg
	v := &opView{
		store:           cfg.Inspector,
		stateCountLimit: cfg.StateCountLimit,
		catalog:         cfg.Catalog,
		policy:          cfg.Policy,
		keys:            cfg.Keys,
		storePath:       cfg.StorePath,
		version:         cfg.Version,
		startedAt:       cfg.StartedAt,
		now:             cfg.Now,
		log:             cfg.Logger,
	}
	c := &opCancel{view: v, tasks: cfg.Tasks, log: cfg.Logger, audit: cfg.Audit}
	e.GET("/admin/v1/overview", v.overview)
	e.GET("/admin/v1/tasks", v.tasks)
	e.GET("/admin/v1/tasks/:id", v.task)
	e.GET("/admin/v1/dead-letters", v.deadLetters)
	e.POST("/admin/v1/tasks/:id/cancel", c.cancel)
	dl := &deadLetterOps{view: v, store: cfg.DeadLetters, log: cfg.Logger, audit: cfg.Audit}
	e.POST("/admin/v1/dead-letters/:id/retry", dl.retry)
	e.DELETE("/admin/v1/dead-letters/:id", dl.drop)
}

// apiError is an answer other than 200: its status and one message.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// reply writes v, or the error as {"message": ...}; an unexpected error
// is logged and answered 500 without its details.
func (v *opView) reply(c echo.Context, body any, err error) error {
	var ae *apiError
	switch {
	case err == nil:
		return c.JSON(http.StatusOK, body)
	case errors.As(err, &ae):
		return c.JSON(ae.status, ErrorBody{Message: ae.msg})
	}
	v.log.Error().Err(err).Str("path", c.Path()).Msg("operator view")
	return c.JSON(http.StatusInternalServerError, ErrorBody{Message: "internal error (see the server log)"})
}

func (v *opView) overview(c echo.Context) error {
	body, err := v.buildOverview(c.Request().Context(), c.QueryParams())
	return v.reply(c, body, err)
}

func (v *opView) buildOverview(ctx context.Context, q url.Values) (*Overview, error) {
	if err := checkParams(q); err != nil {
		return nil, err
	}
	o, err := v.store.Overview(ctx)
	if err != nil {
		return nil, err
	}
	out := &Overview{Version: v.version, StartedAt: v.startedAt.UTC(), Keys: v.keys()}
	out.UptimeSeconds = int64(v.now().Sub(v.startedAt) / time.Second)
	if cat := v.catalog(); cat != nil {
		out.Catalog.Path, out.Catalog.Version, out.Catalog.Functions = cat.Path, cat.Version, len(cat.Functions)
		for _, f := range cat.Functions {
			if v.policy.Decide(f.ID, f.Metadata).Exposed {
				out.Catalog.ExposedSkills++
			}
		}
	}
	out.Store.Path, out.Store.SizeBytes, out.Store.DataBytes = v.storePath, o.FileBytes, o.DataBytes
	t := &out.Tasks
	t.Total, t.NonTerminal, t.Terminal = o.Tasks, o.NonTerminal, o.Tasks-o.NonTerminal
	t.ByState = make(map[string]*int, len(tasks.States))
	for _, st := range tasks.States {
		t.ByState[string(st)] = nil
	}
	for st, n := range o.ByState {
		t.ByState[string(st)] = &n
	}
	t.ByStateComplete, t.StateCountLimit = o.ByStateComplete, v.stateCountLimit
	out.Push.OutboxDepth, out.Push.DeadLetters = o.OutboxDepth, o.DeadLetters
	return out, nil
}

func (v *opView) tasks(c echo.Context) error {
	body, err := v.listTasks(c.Request().Context(), c.QueryParams())
	return v.reply(c, body, err)
}

func (v *opView) listTasks(ctx context.Context, q url.Values) (*TaskList, error) {
	if err := checkParams(q, "state", "function", "caller", "limit", "page_token"); err != nil {
		return nil, err
	}
	var query tasks.TaskQuery
	if q.Has("state") {
		st := a2a.TaskState(q.Get("state"))
		if !slices.Contains(tasks.States, st) {
			return nil, badRequest("state: %q is not a task state (%s)", q.Get("state"), stateNames())
		}
		query.State = st
	}
	if q.Has("function") {
		if query.FunctionID = q.Get("function"); query.FunctionID == "" {
			return nil, badRequest("function: empty (leave it out to match every function)")
		}
	}
	if q.Has("caller") {
		owner := q.Get("caller") // "" is the anonymous caller
		query.Owner = &owner
	}
	limit, err := pageLimit(q)
	if err != nil {
		return nil, err
	}
	after := ""
	if q.Has("page_token") {
		b, err := decodePageToken(q.Get("page_token"), tokenTasks)
		if err != nil {
			return nil, err
		}
		after = string(b)
	}
	page, err := v.store.Tasks(ctx, query, after, limit)
	if err != nil {
		return nil, err
	}
	out := &TaskList{Tasks: make([]TaskSummary, 0, len(page.Tasks)), ScannedTasks: page.Scanned}
	for _, r := range page.Tasks {
		out.Tasks = append(out.Tasks, summaryOf(r))
	}
	if page.Next != "" {
		tok := encodePageToken(tokenTasks, []byte(page.Next))
		out.NextPageToken = &tok
	}
	return out, nil
}

func (v *opView) task(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return v.reply(c, nil, err)
	}
	body, err := v.getTask(c.Request().Context(), id, c.QueryParams())
	return v.reply(c, body, err)
}

func (v *opView) getTask(ctx context.Context, id string, q url.Values) (*TaskView, error) {
	if err := checkParams(q); err != nil {
		return nil, err
	}
	r, evs, err := v.store.Task(ctx, id)
	if errors.Is(err, tasks.ErrNotFound) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	return viewOf(r, evs)
}

func notFound(id string) error {
	return &apiError{http.StatusNotFound, fmt.Sprintf("no task has id %q", id)}
}

// pathID is the {id} of the route, unescaped.
func pathID(c echo.Context) (string, error) {
	id, err := url.PathUnescape(c.Param("id"))
	if err != nil || id == "" {
		return "", badRequest("the task id in the path is empty or badly escaped")
	}
	return id, nil
}

func (v *opView) deadLetters(c echo.Context) error {
	body, err := v.listDeadLetters(c.Request().Context(), c.QueryParams())
	return v.reply(c, body, err)
}

func (v *opView) listDeadLetters(ctx context.Context, q url.Values) (*DeadLetterList, error) {
	if err := checkParams(q, "limit", "page_token"); err != nil {
		return nil, err
	}
	limit, err := pageLimit(q)
	if err != nil {
		return nil, err
	}
	var after uint64
	if q.Has("page_token") {
		b, err := decodePageToken(q.Get("page_token"), tokenDeadLetters)
		if err != nil {
			return nil, err
		}
		if len(b) != 8 {
			return nil, malformedToken()
		}
		after = be.BigEndian.Uint64(b)
	}
	list, more, err := v.store.DeadLetters(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	out := &DeadLetterList{DeadLetters: make([]DeadLetter, 0, len(list))}
	for _, d := range list {
		out.DeadLetters = append(out.DeadLetters, deadLetter(d))
	}
	if more && len(list) > 0 {
		tok := encodePageToken(tokenDeadLetters, be.BigEndian.AppendUint64(nil, list[len(list)-1].ID))
		out.NextPageToken = &tok
	}
	return out, nil
}

// cancel cancels a task as its owner would, through the task service, so
// that the state machine, the event log and the webhooks see an ordinary
// cancel; the audit trail records it as the operator's.
func (oc *opCancel) cancel(c echo.Context) error {
	v := oc.view
	id, err := pathID(c)
	if err != nil {
		return v.reply(c, nil, err)
	}
	ctx := c.Request().Context()
	if err := checkParams(c.QueryParams()); err != nil {
		return v.reply(c, nil, err)
	}
	r, _, err := v.store.Task(ctx, id)
	if errors.Is(err, tasks.ErrNotFound) {
		oc.record(c, id, "", audit.OutcomeClientError, audit.ReasonNotFound)
		return v.reply(c, nil, notFound(id))
	}
	if err != nil {
		return v.reply(c, nil, err)
	}
	_, err = oc.tasks.CancelByOperator(ctx, r.Caller(), id)
	switch {
	case errors.Is(err, tasks.ErrNotCancelable):
		cur, _, gerr := v.store.Task(ctx, id)
		st := r.State()
		if gerr == nil {
			st = cur.State()
		}
		oc.record(c, id, r.Owner, audit.OutcomeClientError, audit.ReasonNotCancelable)
		return v.reply(c, nil, &apiError{http.StatusConflict,
			fmt.Sprintf("task %q is %s: only a task that is not terminal can be canceled", id, st)})
	case errors.Is(err, tasks.ErrNotFound):
		oc.record(c, id, r.Owner, audit.OutcomeClientError, audit.ReasonNotFound)
		return v.reply(c, nil, notFound(id)) // expired meanwhile
	case err != nil:
		oc.record(c, id, r.Owner, audit.OutcomeServerError, audit.ReasonInternalError)
		return v.reply(c, nil, err)
	}
	oc.record(c, id, r.Owner, audit.OutcomeOK, audit.ReasonCanceled)
	oc.log.Info().Str("task_id", id).Str("caller", r.Owner).Msg("task canceled by the operator")
	body, err := v.getTask(ctx, id, nil)
	return v.reply(c, body, err)
}

// record writes the operator action's audit record: ids and outcome only.
func (oc *opCancel) record(c echo.Context, id, owner string, outcome audit.Outcome, reason audit.Reason) {
	if oc.audit == nil {
		return
	}
	oc.audit.Info().
		Bool("operator", true).
		Str("action", "tasks/cancel").
		Str("task_id", id).
		Str("task_caller", owner).
		Str("outcome", string(outcome)).
		Str("reason", string(reason)).
		Str("remote_addr", c.Request().RemoteAddr).
		Msg("operator action")
}

// checkParams refuses a query parameter not in known, and one given more
// than once: a mistyped filter must not read as "no filter".
func checkParams(q url.Values, known ...string) error {
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(known, k) {
			if len(known) == 0 {
				return badRequest("unknown parameter %q: this endpoint takes none", k)
			}
			return badRequest("unknown parameter %q: the parameters are %s", k, strings.Join(known, ", "))
		}
		if len(q[k]) > 1 {
			return badRequest("%s: given %d times, give it once", k, len(q[k]))
		}
	}
	return nil
}

func pageLimit(q url.Values) (int, error) {
	if !q.Has("limit") {
		return defaultPageLimit, nil
	}
	n, err := strconv.Atoi(q.Get("limit"))
	if err != nil || n < 1 || n > maxPageLimit {
		return 0, badRequest("limit: must be an integer from 1 to %d, not %q", maxPageLimit, q.Get("limit"))
	}
	return n, nil
}

func stateNames() string {
	names := make([]string, len(tasks.States))
	for i, st := range tasks.States {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

// Page tokens are opaque to clients: base64url of a kind byte and the
// position (a task id's bytes, or a dead letter's id), so that an id may
// hold any character and a token of one endpoint is refused by another.
const (
	tokenTasks       byte = 't'
	tokenDeadLetters byte = 'd'
)

func encodePageToken(kind byte, pos []byte) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{kind}, pos...))
}

func decodePageToken(tok string, kind byte) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 2 || b[0] != kind || !utf8.Valid(b[1:]) {
		return nil, malformedToken()
	}
	return b[1:], nil
}

func malformedToken() error {
	return badRequest("page_token: malformed; pass back the nextPageToken of an earlier page of this endpoint")
}
