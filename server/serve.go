package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Server runs a Gateway's listeners until its context ends, then drains.
type Server struct {
	g        *Gateway
	api      *http.Server
	metrics  *http.Server
	listener net.Listener
	mlisten  net.Listener
	certs    *certReloader
}

// Listen opens the listeners (so a port conflict fails before anything is
// announced) and builds the http.Servers with every timeout set.
func (g *Gateway) Listen() (*Server, error) {
	s := &Server{g: g}
	s.api = newHTTPServer(g.Handler(), g.cfg, g.log)
	configureHTTP2(s.api)
	ln, err := net.Listen("tcp", g.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", g.cfg.Listen, err)
	}
	s.listener = ln
	if g.cfg.TLSCertFile != "" {
		s.certs, err = newCertReloader(g.cfg.TLSCertFile, g.cfg.TLSKeyFile)
		if err != nil {
			ln.Close()
			return nil, err
		}
		s.api.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certs.get}
	}
	g.limitConnections(s, s.certs == nil)
	if g.cfg.MetricsListen != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", g.MetricsHandler())
		s.metrics = newHTTPServer(mux, g.cfg, g.log)
		if s.mlisten, err = net.Listen("tcp", g.cfg.MetricsListen); err != nil {
			ln.Close()
			return nil, fmt.Errorf("listen %s (metrics.listen): %w", g.cfg.MetricsListen, err)
		}
		s.mlisten, s.metrics.IdleTimeout = limitMetricsConns(s.mlisten), metricsIdleTimeout
	}
	return s, nil
}

// Addr is the API listener's address (useful with port 0).
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

func newHTTPServer(h http.Handler, cfg Config, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout, // slowloris: a trickle of headers is cut off
		ReadTimeout:       bodyReadTimeout,       // a whole request; bodies also keep a minimum data rate (bounds.go)
		WriteTimeout:      cfg.WriteTimeout,      // per write on the API: the router's WriteDeadline re-arms it
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// Serve serves until ctx is done, then shuts down gracefully: listeners
// close at once (new connections are refused) and in-flight requests get up
// to shutdown_grace to finish. SIGHUP reloads the TLS certificate.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	serve := func(srv *http.Server, ln net.Listener, useTLS bool) {
		defer wg.Done()
		var err error
		if useTLS {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}
	wg.Add(1)
	go serve(s.api, s.listener, s.certs != nil)
	if s.metrics != nil {
		wg.Add(1)
		go serve(s.metrics, s.mlisten, false)
	}
	if s.certs != nil {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for range hup {
				if err := s.certs.reload(); err != nil {
					s.g.log.Error("TLS certificate reload failed; keeping the previous one", "error", err)
				} else {
					s.g.log.Info("TLS certificate reloaded")
				}
			}
		}()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	if serveErr == nil {
		s.drain()
	}
	s.g.log.Info("shutting down", "grace", s.g.cfg.ShutdownGrace.String())
	sctx, cancel := context.WithTimeout(context.Background(), s.g.cfg.ShutdownGrace)
	defer cancel()
	err := s.api.Shutdown(sctx)
	if s.metrics != nil {
		_ = s.metrics.Shutdown(sctx)
	}
	wg.Wait()
	if serveErr != nil {
		return serveErr
	}
	if err != nil {
		return fmt.Errorf("graceful shutdown did not finish within %s: %w", s.g.cfg.ShutdownGrace, err)
	}
	return nil
}

// certReloader holds the current TLS certificate and swaps it on reload.
type certReloader struct {
	certFile, keyFile string
	mu                sync.RWMutex
	cert              *tls.Certificate
}

func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	c := &certReloader{certFile: certFile, keyFile: keyFile}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certReloader) reload() error {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("tls.cert_file/tls.key_file: %w", err)
	}
	c.mu.Lock()
	c.cert = &cert
	c.mu.Unlock()
	return nil
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cert, nil
}
