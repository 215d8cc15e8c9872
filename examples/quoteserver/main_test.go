package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestIdempotencyKeyRefusesADoubleBooking: the same key books once; a
// new key books again; the key with another order is refused.
func TestIdempotencyKeyRefusesADoubleBooking(t *testing.T) {
	h := &quoteHandler{token: "t", booked: map[string]booking{}}
	post := func(key, body string) map[string]any {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, "/quote", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer t")
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); w.Code != http.StatusOK || err != nil {
			t.Fatalf("HTTP %d: %s", w.Code, w.Body)
		}
		return out
	}
	order := `{"sku": "A-1", "quantity": 3}`
	first := post("k1", order)
	if first["booking"] != 1.0 || first["total"] != 28.5 {
		t.Fatalf("first booking %v", first)
	}
	if again := post("k1", order); again["booking"] != 1.0 {
		t.Errorf("the same key booked again: %v", again)
	}
	if other := post("k2", order); other["booking"] != 2.0 {
		t.Errorf("another key: %v, want booking 2", other)
	}
	if got := post("k1", `{"sku": "A-1", "quantity": 4}`); got["a2a.error"] != "this Idempotency-Key booked another order" {
		t.Errorf("the key with another order: %v", got)
	}
	if got := post("", order); got["booking"] != 3.0 {
		t.Errorf("no key: %v, want booking 3", got)
	}
}
