package emurecord

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Path is the route that answers Stats as JSON. No route of Forgejo's or
// GitHub's API starts with it (neither allows a name that starts with
// '_'), and the gateway's clients build every path from a fixed first
// segment ("api", "repos", "app"), so the gateway never asks for it. The
// emulators listen on 127.0.0.1 only, so only this machine can.
const Path = "/__emulator/record"

// Stats is what a Ring holds, as Path answers it.
type Stats struct {
	// Kept counts the requests the ring holds.
	Kept int `json:"kept"`
	// KeptHeadBytes and KeptBodyBytes are their Cost, summed.
	KeptHeadBytes int `json:"kept_head_bytes"`
	KeptBodyBytes int `json:"kept_body_bytes"`
	// Seen counts every request recorded since the emulator started or
	// its record was reset, dropped ones included.
	Seen int `json:"seen"`
	// Newest names the newest request kept: method and request target.
	Newest string `json:"newest"`
}

// Serve answers GET Path with stats() and hands every other request to
// next. It goes in front of the recording, so asking does not change what
// it answers.
func Serve(next http.Handler, stats func() Stats) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != Path {
			next.ServeHTTP(w, r)
			return
		}
		body, err := json.Marshal(stats())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// Get asks the emulator at origin ("http://127.0.0.1:<port>") what its
// record holds.
func Get(c *http.Client, origin string) (Stats, error) {
	var s Stats
	resp, err := c.Get(origin + Path)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET %s%s: %s", origin, Path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return s, fmt.Errorf("GET %s%s: %w", origin, Path, err)
	}
	return s, nil
}
