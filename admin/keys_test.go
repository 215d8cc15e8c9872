package admin_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/a2ad/a2ad/admin"
)

func TestKeysEndpoint(t *testing.T) {
	if code, body := serve(t, newServer(admin.Config{}), http.MethodGet, admin.KeysPath); code != http.StatusNotFound ||
		body != `{"message":"this server has no keys file"}` {
		t.Errorf("without a keys file: %d %s", code, body)
	}
	created, used := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC), time.Date(2026, 11, 24, 7, 0, 1, 0, time.UTC)
	s := newServer(admin.Config{KeyList: func() *admin.KeyList {
		return &admin.KeyList{Keys: []admin.KeyInfo{
			{Caller: "acme", KeyID: "3095d5ac", State: "revoked", Revoked: &used},
			{Caller: "acme", KeyID: "4787ce51", State: "active", Created: &created, LastUsed: &used},
		}}
	}})
	code, body := serve(t, s, http.MethodGet, admin.KeysPath)
	want := `{"keys":[{"caller":"acme","keyId":"3095d5ac","state":"revoked","created":null,"revoked":"2026-11-24T07:00:01Z","lastUsed":null},` +
		`{"caller":"acme","keyId":"4787ce51","state":"active","created":"2026-11-24T06:00:00Z","revoked":null,"lastUsed":"2026-11-24T07:00:01Z"}]}`
	if code != http.StatusOK || body != want {
		t.Errorf("GET %s = %d\n%s\nwant\n%s", admin.KeysPath, code, body, want)
	}
	if code, body := serve(t, s, http.MethodGet, admin.KeysPath+"?limit=1"); code != http.StatusBadRequest {
		t.Errorf("unknown parameter: %d %s", code, body)
	}
}
