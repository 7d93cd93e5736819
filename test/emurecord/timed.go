package emurecord

import (
	"net/http"
	"time"
)

// Timed tells served how long next took to serve each request, from its
// arrival at the emulator to the handler's return (the answer written):
// the upstream's own share of a gateway call, which a load or abuse run
// sets beside the gateway's logged duration to tell a slow upstream from
// a slow gateway. With served nil it returns next unchanged.
func Timed(next http.Handler, served func(r *http.Request, d time.Duration)) http.Handler {
	if served == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		defer func() { served(r, time.Since(start)) }()
		next.ServeHTTP(w, r)
	})
}
