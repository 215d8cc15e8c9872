package metrics_test

import "testing"

func TestListenerHooks(t *testing.T) {
	m := newMetrics(t, nil)
	// Every series shows from the start, at zero.
	want(t, get(t, m),
		`a2ad_connections_open{listener="main"} 0`,
		`a2ad_connections_open{listener="admin"} 0`,
		`a2ad_connections_refused_total{listener="main"} 0`,
		`a2ad_accept_pauses_total{listener="main",reason="max_conns"} 0`,
		`a2ad_accept_pauses_total{listener="admin",reason="accept_error"} 0`,
	)
	main, admin := m.Listener("main"), m.Listener("admin")
	main.Open(1)
	main.Open(1)
	main.Open(1)
	main.Open(-1)
	admin.Open(1)
	main.Refused()
	main.Refused()
	main.Paused(true)
	admin.Paused(false)
	admin.Paused(false)
	want(t, get(t, m),
		`a2ad_connections_open{listener="main"} 2`,
		`a2ad_connections_open{listener="admin"} 1`,
		`a2ad_connections_refused_total{listener="main"} 2`,
		`a2ad_connections_refused_total{listener="admin"} 0`,
		`a2ad_accept_pauses_total{listener="main",reason="max_conns"} 1`,
		`a2ad_accept_pauses_total{listener="main",reason="accept_error"} 0`,
		`a2ad_accept_pauses_total{listener="admin",reason="accept_error"} 2`,
	)
	defer func() {
		if recover() == nil {
			t.Error(`Listener("public") did not panic: label values come from a fixed set`)
		}
	}()
	m.Listener("public")
}

func TestListenerHooksAllocateNothing(t *testing.T) {
	h := newMetrics(t, nil).Listener("main")
	if n := testing.AllocsPerRun(100, func() {
		h.Open(1)
		h.Open(-1)
		h.Refused()
		h.Paused(true)
	}); n != 0 {
		t.Errorf("listener hooks allocate %v times per run, want 0", n)
	}
}
