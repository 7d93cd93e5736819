package server

import "time"

// drain is the first step of a graceful stop: /readyz answers 503 at once
// while the listener keeps serving every request for shutdown_drain, so
// load balancers (Kubernetes endpoint removal, Envoy's health checks) stop
// sending new calls before the listener closes; only then does Shutdown
// close it and give in-flight calls shutdown_grace to finish. Without it a
// zero-loss rolling restart depends on the balancer retrying refused
// connections.
func (s *Server) drain() {
	s.g.draining.Store(true)
	if d := s.g.cfg.ShutdownDrain; d > 0 {
		s.g.log.Info("draining: /readyz answers 503 while the listener still serves", "drain", d.String())
		time.Sleep(d)
	}
}
