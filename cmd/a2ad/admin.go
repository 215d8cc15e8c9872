package main

import (
	"errors"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/transport/httpx"
)

// What the admin listener reads and changes, and who provides it.
var (
	_ admin.BackupSource = (*boltstore.Store)(nil) // a database has none
	_ admin.Canceler     = (*tasks.Service)(nil)
	_ admin.Reloader     = (*Main)(nil)
	_ admin.Pinger       = (*pgstore.Store)(nil)
)

// newAdmin builds the admin listener's handler on the open store and
// service.
func (m *Main) newAdmin() *admin.Server {
	keys := func() *int { return nil }
	var keyList func() *admin.KeyList
	if reg := m.registry; reg != nil {
		keys = func() *int { n := reg.Keys().Len(); return &n }
		keyList = m.keyList
	}
	return admin.New(admin.Config{
		Inspector:       m.inspector,
		StateCountLimit: m.stateCountLimit,
		Outbox:          m.store,
		DeadLetters:     m.store,
		Backup:          m.backup,
		Tasks:           m.service,
		Reloader:        m,
		NotReady:        m.notReady,
		Metrics:         m.metrics.Handler(),
		Catalog:         m.catalog.Load,
		Policy:          m.Config.Policy(),
		Keys:            keys,
		KeyList:         keyList,
		StorePath:       storeName(m.Config.Store),
		Version:         Version(),
		StartedAt:       time.Now(), // the admin listener starts within Open
		Audit:           m.auditLogger,
		Logger:          m.Logger,
	})
}

// notReady is why a2ad takes no work, "" while it does: the store is
// open (and a database answers), the replica holds its lease, a
// catalogue is loaded and it is not draining.
func (m *Main) notReady() string {
	switch {
	case m.draining.Load():
		return "draining"
	case m.catalog.Load() == nil:
		return "no catalogue loaded"
	case m.store == nil || m.store.Closed():
		return "store closed"
	case m.storeWritable != nil && m.storeWritable() != nil:
		var unwritable *boltstore.UnwritableError
		if errors.As(m.storeWritable(), &unwritable) {
			return "store cannot write to its disk"
		}
		return "store stopped taking writes"
	case m.storeProbe != nil:
		if why := m.storeProbe.NotReady(); why != "" {
			return why
		}
	}
	if m.service != nil {
		return m.service.NotReady()
	}
	return ""
}

// addMainRoutes adds to the main listener what the admin package serves
// there: /readyz, and for /admin/* a 404 that says where the admin
// listener is.
func (m *Main) addMainRoutes(e *echo.Echo) {
	httpx.GET(e, "/readyz", admin.Readyz(m.notReady))
	e.Any("/admin/*", admin.WrongListener)
}

// keyList is the keys in force with their last use, for the admin
// listener.
func (m *Main) keyList() *admin.KeyList {
	out := &admin.KeyList{Keys: []admin.KeyInfo{}}
	for _, k := range m.registry.Keys().List() {
		out.Keys = append(out.Keys, admin.KeyInfo{Caller: k.CallerID, KeyID: k.ID, State: k.State(),
			Created: timeOrNil(k.Created), Revoked: timeOrNil(k.Revoked), LastUsed: timeOrNil(m.usage.Last(k.Hash))})
	}
	return out
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
