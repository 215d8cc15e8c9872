package main

import (
	"errors"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/catalogcmd"
	"github.com/a2ad/a2ad/functions"
)

// Reload puts a changed catalogue, keys file and TLS certificate in force
// and reopens the audit log file. The open streams of keys the new file
// revokes, disables or removes end (a key whose tiers change keeps its streams: they show
// the caller's own tasks, which it may still read). Each part that has problems keeps what is in force and
// logs every problem; Reload returns an error when a part failed. Calls
// already running finish on the function definitions they started with;
// new calls see the new catalogue. The card changes (and with it its
// ETag) only when the skills it shows or the keys that sign it do.
func (m *Main) Reload() (*admin.ReloadReport, error) {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	m.notify.Reloading() // RELOADING=1, then READY=1 once done, for systemd
	defer m.notify.Ready()
	r := &admin.ReloadReport{}
	var errs []error

	old := m.catalog.Load()
	r.Catalog = admin.CatalogReload{Version: old.Version, Functions: len(old.Functions), Problems: []string{}}
	cat, err := functions.Load(m.Config.Catalog, functions.LoadOptions{})
	if err != nil {
		var le *functions.LoadError
		if errors.As(err, &le) {
			for _, p := range le.Problems {
				line := p.String()
				r.Catalog.Problems = append(r.Catalog.Problems, line)
				m.Logger.Error().Str("catalog", m.Config.Catalog).Str("problem", line).Msg("catalogue has a problem")
			}
		} else {
			r.Catalog.Problems = append(r.Catalog.Problems, err.Error())
		}
		m.Logger.Error().Str("catalog", m.Config.Catalog).Int("problems", len(r.Catalog.Problems)).Str("catalog_version", old.Version).
			Msg("catalogue not reloaded: the previous one stays in force")
		errs = append(errs, err)
	} else {
		m.catalog.Store(cat)
		m.cards.Reset()
		r.Catalog = admin.CatalogReload{Reloaded: true, Changed: cat.Version != old.Version, Version: cat.Version,
			Functions: len(cat.Functions), Problems: []string{}}
		m.Logger.Info().Str("catalog", m.Config.Catalog).Str("old_version", old.Version).Str("catalog_version", cat.Version).
			Int("functions", len(cat.Functions)).Msg("catalogue reloaded")
	}

	if m.registry != nil {
		r.Keys = &admin.KeysReload{Problems: []string{}}
		if err := m.registry.Reload(); err != nil {
			var le *callers.LoadError
			if errors.As(err, &le) {
				for _, p := range le.Problems {
					r.Keys.Problems = append(r.Keys.Problems, p.String())
					m.Logger.Error().Str("keys", m.Config.Keys).Str("problem", p.String()).Msg("keys file has a problem")
				}
			} else {
				r.Keys.Problems = append(r.Keys.Problems, err.Error())
			}
			m.Logger.Error().Err(err).Str("keys", m.Config.Keys).Msg("keys file not reloaded: the previous keys stay in force")
			errs = append(errs, err)
		} else {
			r.Keys.Reloaded = true
			if m.srv != nil {
				// A revoked key keeps no stream open.
				r.Keys.StreamsEnded = m.srv.EndRevokedStreams()
			}
			m.Logger.Info().Str("keys", m.Config.Keys).Int("entries", m.registry.Keys().Len()).
				Int("streams_ended", r.Keys.StreamsEnded).Msg("keys reloaded")
		}
		r.Keys.Entries = m.registry.Keys().Len()
	}
	m.warnUnnamedTiers()
	m.tellMCP()
	if m.audit != nil {
		ok := true
		if err := m.audit.Reopen(); err != nil {
			ok = false
			m.Logger.Error().Err(err).Msg("audit log not reopened")
			errs = append(errs, err)
		}
		r.AuditLogReopened = &ok
	}
	if err := m.reloadTLS(r); err != nil {
		errs = append(errs, err)
	}
	if err := m.reloadCardKeys(r); err != nil {
		errs = append(errs, err)
	}
	return r, errors.Join(errs...)
}

// warnUnnamedTiers logs at warn level each tier in force that the
// catalogue names nowhere (catalogcmd.UnnamedTiers).
func (m *Main) warnUnnamedTiers() {
	var keys *callers.Keys
	if m.registry != nil {
		keys = m.registry.Keys()
	}
	for _, p := range catalogcmd.UnnamedTiers(m.catalog.Load(), m.Config.Tier, keys) {
		m.Logger.Warn().Str("catalog", m.Config.Catalog).Msg(p)
	}
}

// tellMCP tells the MCP listens of the reload: each hears whether the
// tools its caller sees changed.
func (m *Main) tellMCP() {
	if m.mcp != nil {
		m.mcp.Reloaded()
	}
}
