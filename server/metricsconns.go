package server

import (
	"net"
	"time"

	"golang.org/x/net/netutil"
)

// maxMetricsConns caps the metrics listener's open connections: it serves
// a few scrapers, and without a cap anyone who can reach it could open
// connections until the process runs out of file descriptors, which the
// API listener shares. Past the cap a connection waits in the kernel's
// accept queue until one closes (an idle one after metricsIdleTimeout, a
// silent one after http.read_header_timeout).
const maxMetricsConns = 16

// metricsIdleTimeout closes a scraper's idle keep-alive connection sooner
// than the API listener does, so a slot is not held between scrapes.
const metricsIdleTimeout = 30 * time.Second

// limitMetricsConns returns ln capped at maxMetricsConns open connections.
func limitMetricsConns(ln net.Listener) net.Listener {
	return netutil.LimitListener(ln, maxMetricsConns)
}
