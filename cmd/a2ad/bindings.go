package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"

	"google.golang.org/grpc"

	a2agrpc "github.com/a2ad/a2ad/transport/grpc"
)

// restPath is where the HTTP+JSON binding is served on the main
// listener.
const restPath = "/a2a/rest"

// openGRPCListener binds the gRPC binding's listener, if there is one,
// before the card is built: the card gives its address, the base URL's
// host with the listener's port.
func (m *Main) openGRPCListener(context.Context) error {
	if m.Config.GRPCListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", m.Config.GRPCListen)
	if err != nil {
		return fmt.Errorf("grpc-listen: %w", err)
	}
	m.grpcLn = ln
	m.onClose("grpc listener", func(context.Context) error {
		if m.grpc == nil {
			_ = ln.Close()
		}
		return nil
	})
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		m.Logger.Warn().Str("grpc_listen", ln.Addr().String()).Msg("gRPC listener beyond loopback: it is plaintext; put TLS and authentication in front")
	}
	u, err := url.Parse(m.baseURL)
	if err != nil {
		return fmt.Errorf("base-url: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	m.grpcAddr = net.JoinHostPort(u.Hostname(), port)
	return nil
}

// serveGRPC serves the gRPC binding through the main server's core: the
// same authentication, limits, audit trail and streams. It drains and
// stops before the main listener: new calls get -32051 from then on (as
// status UNAVAILABLE), streams end (their clients resume), and running
// calls finish within the grace period.
func (m *Main) serveGRPC(context.Context) error {
	if m.grpcLn == nil {
		return nil
	}
	m.grpc = a2agrpc.New(m.srv.Core())
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := m.grpc.Serve(m.grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			m.Logger.Error().Err(err).Msg("gRPC listener stopped")
		}
	}()
	m.onClose("grpc", func(ctx context.Context) error {
		// As the main listener drains (shutdownHTTP, next): streams end,
		// new calls get UNAVAILABLE (-32051) while running ones finish
		// within the grace period; then the server stops.
		m.srv.CloseStreams()
		_ = m.service.Drain(ctx) // its error is ctx's, handled below
		stopped := make(chan struct{})
		go func() {
			m.grpc.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-ctx.Done():
			m.Logger.Warn().Msg("grace period over with gRPC calls in flight")
			m.grpc.Stop()
			<-stopped
		}
		<-served
		return nil
	})
	return nil
}

// GRPCAddr is the address of the gRPC listener, "" when there is none.
func (m *Main) GRPCAddr() string {
	if m.grpcLn == nil {
		return ""
	}
	return m.grpcLn.Addr().String()
}
