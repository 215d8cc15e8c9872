// Command quoteserver is the demo backend of the pricing::quote function in
// examples/catalog.yaml: a tiny HTTP service that prices orders.
//
//	go run ./examples/quoteserver [-addr 127.0.0.1:8099]
//
// POST /quote takes {"sku": "...", "quantity": n, "approved": bool} and
// books the order: it answers {"booking", "sku", "quantity", "unit_price",
// "total"}. A request with an Idempotency-Key it has booked already (a2ad
// sends the same key when it runs a call again after a crash) gets the
// same booking back, never a second one; the key with another order is
// refused. An order over 1000
// units needs "approved": true; without it the answer is the backend
// contract's input-required signal, so the A2A task waits for the caller
// to confirm. Requests must carry "Authorization: Bearer <token>", where
// the token is $QUOTE_TOKEN, or "demo-token" when that is unset (the
// catalogue uses the same default).
package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

const (
	unitPrice        = 9.5
	approvalQuantity = 1000
	maxBodyBytes     = 1 << 20
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8099", "address to listen on")
	flag.Parse()

	token := os.Getenv("QUOTE_TOKEN")
	if token == "" {
		token = "demo-token"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, token); err != nil {
		log.Fatal(err)
	}
}

// run serves until ctx is done, then shuts down gracefully.
func run(ctx context.Context, addr, token string) error {
	mux := http.NewServeMux()
	mux.Handle("POST /quote", &quoteHandler{token: token, booked: map[string]booking{}})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}

	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("quoteserver listening on http://%s/quote", addr)

	select {
	case err := <-errc:
		return fmt.Errorf("listen: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type quoteHandler struct {
	token string

	mu     sync.Mutex
	booked map[string]booking // by Idempotency-Key
	order  []string           // the keys of booked, oldest first
	next   int                // the last booking number
}

// booking is what a key booked: the order and the answer.
type booking struct {
	req   quoteRequest
	quote quote
}

// maxBookings caps the keys remembered; the oldest go first. A real
// service keeps them in its database, with the booking.
const maxBookings = 10000

type quoteRequest struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
	Approved bool   `json:"approved"`
}

type quote struct {
	Booking   int     `json:"booking"`
	SKU       string  `json:"sku"`
	Quantity  int     `json:"quantity"`
	UnitPrice float64 `json:"unit_price"`
	Total     float64 `json:"total"`
}

func (h *quoteHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	want := "Bearer " + h.token
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
		// Never log the header: it is a credential.
		log.Printf("quote: unauthorized request from %s", r.RemoteAddr)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized"})
		return
	}

	var req quoteRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be a JSON object"})
		return
	}
	// The catalogue's input schema already checked these; a backend checks
	// again because it cannot know who else calls it. An {"a2a.error": ...}
	// answer is shown to the A2A caller.
	switch {
	case req.SKU == "":
		writeJSON(w, http.StatusOK, map[string]string{"a2a.error": "sku is required"})
		return
	case req.Quantity < 1:
		writeJSON(w, http.StatusOK, map[string]string{"a2a.error": "quantity must be at least 1"})
		return
	case req.Quantity > approvalQuantity && !req.Approved:
		writeJSON(w, http.StatusOK, map[string]any{
			"a2a.input_required": map[string]string{
				"question": `Orders over 1000 units need approval: resend with "approved": true`,
			},
		})
		return
	}

	q, replay, ok := h.book(r.Header.Get("Idempotency-Key"), req)
	switch {
	case !ok:
		writeJSON(w, http.StatusOK, map[string]string{"a2a.error": "this Idempotency-Key booked another order"})
		return
	case replay:
		log.Printf("quote: booking %d requested again: not booked twice", q.Booking)
	default:
		log.Printf("quote: booking %d: sku=%q quantity=%d", q.Booking, req.SKU, req.Quantity)
	}
	writeJSON(w, http.StatusOK, q)
}

// book books req, unless key ("" books every time) booked it already:
// then it returns that booking with replay set; ok is false if key booked
// another order.
func (h *quoteHandler) book(key string, req quoteRequest) (q quote, replay, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b, seen := h.booked[key]; seen && key != "" {
		return b.quote, true, b.req == req
	}
	h.next++
	q = quote{Booking: h.next, SKU: req.SKU, Quantity: req.Quantity, UnitPrice: unitPrice, Total: unitPrice * float64(req.Quantity)}
	if key != "" {
		if len(h.order) == maxBookings {
			delete(h.booked, h.order[0])
			h.order = h.order[1:]
		}
		h.booked[key] = booking{req: req, quote: q}
		h.order = append(h.order, key)
	}
	return q, false, true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("quote: write response: %v", err)
	}
}
