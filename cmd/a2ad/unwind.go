package main

import "context"

// closer undoes one step of Open.
type closer struct {
	name  string
	close func(ctx context.Context) error
}

// onClose pushes fn, which undoes what the step that calls it opened,
// onto the list Close unwinds. Closers never call it.
func (m *Main) onClose(name string, fn func(ctx context.Context) error) {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	m.closers = append(m.closers, closer{name, fn})
}

// unwind runs the closers, last pushed first, within the shutdown grace
// period. It returns first, the error that made Open fail, or else the
// first error of a closer; it logs the others. A second unwind waits for
// the first, then finds nothing left to close.
func (m *Main) unwind(first error) error {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	cs := m.closers
	m.closers = nil
	ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownGrace)
	defer cancel()
	for i := len(cs) - 1; i >= 0; i-- {
		err := cs[i].close(ctx)
		switch {
		case err == nil:
		case first == nil:
			first = err
		default:
			m.Logger.Error().Err(err).Str("step", cs[i].name).Msg("shutdown")
		}
	}
	return first
}
