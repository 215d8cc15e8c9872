// Package transporttest has what the tests of the bindings share: a
// fake of the task service. Only tests import it.
package transporttest

import (
	"context"
	"errors"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// Service is a fake of the task service's parts the bindings call. A
// method whose function is unset fails the test that calls it.
type Service struct {
	// TB is the test the fake fails on an unexpected call.
	TB       testing.TB
	SendFn   func(p a2a.SendParams) (*a2a.Task, error)
	GetFn    func(id string, historyLength *int) (*a2a.Task, error)
	CancelFn func(id string) (*a2a.Task, error)
	ListFn   func(q tasks.ListQuery) (tasks.ListPage, error)
	WatchFn  func(id string, after *uint64, emit func(tasks.StreamEvent) error) error
	SetFn    func(taskID string, cfg a2a.PushConfig) (*a2a.TaskPushConfig, error)
	// SendCtx, when set, is told the context of each Send.
	SendCtx func(ctx context.Context)
	// Caller, when set, is told the caller of each Get and List (before
	// GetFn or ListFn), for a fake that keeps callers' tasks apart.
	Caller func(c tasks.Caller)
}

var (
	_ transport.TaskService   = (*Service)(nil)
	_ transport.Lister        = (*Service)(nil)
	_ transport.StreamService = (*Service)(nil)
	_ transport.PushService   = (*Service)(nil)
)

// ErrUnexpected is what a method without its function returns.
var ErrUnexpected = errors.New("fake: unexpected call")

func (s *Service) unexpected(what string) error {
	s.TB.Errorf("unexpected call to %s", what)
	return ErrUnexpected
}

func (s *Service) Send(ctx context.Context, _ tasks.Caller, p a2a.SendParams) (*a2a.Task, tasks.Outcome, error) {
	if s.SendCtx != nil {
		s.SendCtx(ctx)
	}
	if s.SendFn == nil {
		return nil, tasks.Outcome{}, s.unexpected("Send")
	}
	t, err := s.SendFn(p)
	return t, tasks.Outcome{}, err
}

func (s *Service) Get(_ context.Context, c tasks.Caller, id string, h *int) (*a2a.Task, error) {
	if s.Caller != nil {
		s.Caller(c)
	}
	if s.GetFn == nil {
		return nil, s.unexpected("Get")
	}
	return s.GetFn(id, h)
}

func (s *Service) Cancel(_ context.Context, _ tasks.Caller, id string) (*a2a.Task, error) {
	if s.CancelFn == nil {
		return nil, s.unexpected("Cancel")
	}
	return s.CancelFn(id)
}

func (s *Service) List(_ context.Context, c tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error) {
	if s.Caller != nil {
		s.Caller(c)
	}
	if s.ListFn == nil {
		return tasks.ListPage{}, s.unexpected("List")
	}
	return s.ListFn(q)
}

func (s *Service) Stream(context.Context, tasks.Caller, a2a.SendParams, *uint64, func(tasks.StreamEvent) error) (tasks.Outcome, error) {
	return tasks.Outcome{}, s.unexpected("Stream")
}

func (s *Service) Watch(_ context.Context, _ tasks.Caller, id string, after *uint64, emit func(tasks.StreamEvent) error) error {
	if s.WatchFn == nil {
		return s.unexpected("Watch")
	}
	return s.WatchFn(id, after, emit)
}

// Subscribe is Watch: WatchFn serves both.
func (s *Service) Subscribe(ctx context.Context, c tasks.Caller, id string, after *uint64, emit func(tasks.StreamEvent) error) error {
	return s.Watch(ctx, c, id, after, emit)
}

func (s *Service) SetPushConfig(_ context.Context, _ tasks.Caller, taskID string, cfg a2a.PushConfig) (*a2a.TaskPushConfig, error) {
	if s.SetFn == nil {
		return nil, s.unexpected("SetPushConfig")
	}
	return s.SetFn(taskID, cfg)
}

func (s *Service) PushConfig(context.Context, tasks.Caller, string, string) (*a2a.TaskPushConfig, error) {
	return nil, tasks.ErrPushConfigNotFound
}

func (s *Service) PushConfigList(context.Context, tasks.Caller, string) ([]a2a.TaskPushConfig, error) {
	return nil, nil
}

func (s *Service) DeletePushConfig(context.Context, tasks.Caller, string, string) error { return nil }
