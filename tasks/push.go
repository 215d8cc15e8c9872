package tasks

import (
	"context"
	"errors"

	"github.com/a2ad/a2ad/a2a"
)

// ErrPushConfigNotFound: the task has no webhook with that id.
var ErrPushConfigNotFound = errors.New("push notification config not found")

// MaxPushConfigs caps the webhooks of one task.
const MaxPushConfigs = 10

// URLChecker refuses webhook URLs a2ad must not call (the SSRF guard). Its
// error's text is shown to the caller.
type URLChecker interface {
	Check(ctx context.Context, rawURL string) error
}

// checkPushConfig validates cfg for task id, and gives it an id (the task's
// when the client chose none, as the 0.3 "the task's config" reads).
// guard, the SSRF guard, refuses its URL (ErrPushUnavailable without one).
func checkPushConfig(ctx context.Context, guard URLChecker, taskID, path string, cfg *a2a.PushConfig) error {
	if cfg.ID == "" {
		cfg.ID = taskID
	}
	if guard == nil {
		return ErrPushUnavailable
	}
	if err := guard.Check(ctx, cfg.URL); err != nil {
		return invalid(path+"/url", err.Error())
	}
	return nil
}

// SetPushConfig adds or replaces (by id) a webhook of caller's task.
// Errors: ErrNotFound, ErrPushUnavailable, an *InputError for a refused
// URL or too many webhooks.
func (s *Service) SetPushConfig(ctx context.Context, caller Caller, taskID string, cfg a2a.PushConfig) (*a2a.TaskPushConfig, error) {
	if _, err := s.store.Get(ctx, caller.ID, taskID, Head); err != nil {
		return nil, err // an unknown task reads as unknown before any URL check
	}
	if err := checkPushConfig(ctx, s.cfg.PushGuard, taskID, "/pushNotificationConfig", &cfg); err != nil {
		return nil, err
	}
	_, err := s.store.PushConfigs(ctx, caller.ID, taskID, func(cfgs []a2a.PushConfig) ([]a2a.PushConfig, error) {
		return upsertPushConfig(cfgs, cfg, "/pushNotificationConfig")
	})
	if err != nil {
		return nil, err
	}
	return &a2a.TaskPushConfig{TaskID: taskID, PushNotificationConfig: cfg}, nil
}

// PushConfig returns a webhook of caller's task: the one with configID,
// or, without one, the task's own (id = task id) or else its first.
// Errors: ErrNotFound, ErrPushConfigNotFound.
func (s *Service) PushConfig(ctx context.Context, caller Caller, taskID, configID string) (*a2a.TaskPushConfig, error) {
	rec, err := s.store.Get(ctx, caller.ID, taskID, Head)
	if err != nil {
		return nil, err
	}
	var found *a2a.PushConfig
	for i := range rec.PushConfigs {
		c := &rec.PushConfigs[i]
		if c.ID == configID || (configID == "" && (c.ID == taskID || found == nil)) {
			found = c
		}
	}
	if found == nil {
		return nil, ErrPushConfigNotFound
	}
	return &a2a.TaskPushConfig{TaskID: taskID, PushNotificationConfig: *found}, nil
}

// PushConfigList returns every webhook of caller's task. Errors:
// ErrNotFound.
func (s *Service) PushConfigList(ctx context.Context, caller Caller, taskID string) ([]a2a.TaskPushConfig, error) {
	rec, err := s.store.Get(ctx, caller.ID, taskID, Head)
	if err != nil {
		return nil, err
	}
	out := make([]a2a.TaskPushConfig, 0, len(rec.PushConfigs))
	for _, c := range rec.PushConfigs {
		out = append(out, a2a.TaskPushConfig{TaskID: taskID, PushNotificationConfig: c})
	}
	return out, nil
}

// DeletePushConfig removes a webhook of caller's task; removing one that
// is not there is not an error. Errors: ErrNotFound.
func (s *Service) DeletePushConfig(ctx context.Context, caller Caller, taskID, configID string) error {
	_, err := s.store.PushConfigs(ctx, caller.ID, taskID, func(cfgs []a2a.PushConfig) ([]a2a.PushConfig, error) {
		out := cfgs[:0]
		for _, c := range cfgs {
			if c.ID != configID {
				out = append(out, c)
			}
		}
		return out, nil
	})
	return err
}

// upsertPushConfig replaces the config with cfg's id, or adds cfg.
func upsertPushConfig(cfgs []a2a.PushConfig, cfg a2a.PushConfig, path string) ([]a2a.PushConfig, error) {
	for i := range cfgs {
		if cfgs[i].ID == cfg.ID {
			cfgs[i] = cfg
			return cfgs, nil
		}
	}
	if len(cfgs) >= MaxPushConfigs {
		return nil, invalid(path, "a task may have at most 10 push notification configs")
	}
	return append(cfgs, cfg), nil
}

// addPushConfig adds cfg to r's webhooks (a follow-up message's).
func addPushConfig(r *Record, cfg a2a.PushConfig) error {
	cfgs, err := upsertPushConfig(append([]a2a.PushConfig(nil), r.PushConfigs...), cfg, "/configuration/pushNotificationConfig")
	if err != nil {
		return err
	}
	r.PushConfigs = cfgs
	return nil
}
