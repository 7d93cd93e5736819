package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/tcpcut"
)

// fault is one thing that goes wrong: inject makes it happen and returns
// once it has ended (the dependency is back).
type fault struct {
	name string
	// rolling marks the rolling restart, where no accepted call may fail
	// and there is no dependency to recover from.
	rolling bool
	inject  func() error
}

// phase is a fault as it ran: from start to the dependency's return
// (restored), and the load after it until end.
type phase struct {
	fault
	start, restored, end time.Time
}

// faults are the run's faults, in order.
func faults(s *stack, o options) []fault {
	cut := func(p *tcpcut.Proxy, m tcpcut.Mode, d time.Duration) func() error {
		return func() error {
			p.Set(m)
			time.Sleep(d)
			p.Set(tcpcut.Up)
			return nil
		}
	}
	return []fault{
		{name: "rolling restart", rolling: true, inject: func() error {
			for _, r := range s.pair {
				r.stop()
				if err := r.start(); err != nil {
					return err
				}
				for !r.ready.Load() {
					time.Sleep(20 * time.Millisecond)
				}
			}
			return nil
		}},
		// A restart drops every connection and refuses new ones for as
		// long as the server takes to come back.
		{name: "PostgreSQL restart", inject: cut(s.pgProxy, tcpcut.Refuse, 300*time.Millisecond)},
		{name: fmt.Sprintf("PostgreSQL stopped %s", o.stop), inject: cut(s.pgProxy, tcpcut.Refuse, o.stop)},
		{name: fmt.Sprintf("Redis stopped %s", o.stop), inject: cut(s.redisProxy, tcpcut.Refuse, o.stop)},
		{name: fmt.Sprintf("SQLite disk full %s", o.outage), inject: func() error { return fullDisk(s.sqlite.pid(), o.outage) }},
		{name: fmt.Sprintf("Forgejo refusing %s", o.outage), inject: cut(s.forgejoProxy, tcpcut.Refuse, o.outage)},
		{name: fmt.Sprintf("Forgejo hanging %s", o.outage), inject: cut(s.forgejoProxy, tcpcut.Hang, o.outage)},
		{name: fmt.Sprintf("Forgejo answering 502 %s", o.outage), inject: func() error {
			s.forgejo.SetFault("", forgejoemu.Fault{Kind: forgejoemu.FaultStatus, Status: http.StatusBadGateway})
			time.Sleep(o.outage)
			s.forgejo.ClearFaults()
			return nil
		}},
	}
}

// results are a run's phases and every call made during it.
type results struct {
	baseline phase
	phases   []phase
	records  []record
	// stored says, per acknowledged registration's client, whether its
	// row was found after the run.
	stored map[string]bool
}

// runPhases puts the load on, runs the baseline and each fault, stops the
// load and the gateways (so the SQLite gateway's file is whole), and
// looks up every acknowledged row.
func runPhases(s *stack, o options) (*results, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	pair := &balancer{target: "pair", replicas: s.pair}
	lite := &balancer{target: "sqlite", replicas: []*replica{s.sqlite}}
	pair.pollReadiness(ctx)
	lite.pollReadiness(ctx)
	hc := &http.Client{Timeout: 15 * time.Second}
	var load sync.WaitGroup
	kinds := []kind{anonRead, docsRead, register}
	for i := range o.clients {
		// Each client starts at another kind, so every kind is in flight.
		mine := append(append([]kind(nil), kinds[i%3:]...), kinds[:i%3]...)
		c := &client{lb: pair, hc: hc, kinds: mine, interval: o.interval, s: s, rec: rec}
		load.Go(func() { c.run(ctx) })
	}
	c := &client{lb: lite, hc: hc, kinds: []kind{register}, interval: o.interval, s: s, rec: rec}
	load.Go(func() { c.run(ctx) })

	res := &results{}
	res.baseline = phase{fault: fault{name: "baseline"}, start: time.Now()}
	time.Sleep(o.baseline)
	res.baseline.restored = time.Now()
	res.baseline.end = res.baseline.restored
	for _, f := range faults(s, o) {
		p := phase{fault: f, start: time.Now()}
		if err := f.inject(); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		p.restored = time.Now()
		time.Sleep(o.settle)
		p.end = time.Now()
		res.phases = append(res.phases, p)
	}
	cancel()
	load.Wait()
	res.records = rec.all()
	for _, r := range append([]*replica{s.sqlite}, s.pair...) {
		r.stop()
	}
	res.stored = map[string]bool{}
	for _, sqlite := range []bool{false, true} {
		var ids []string
		for _, r := range res.records {
			if r.clientID != "" && (r.target == "sqlite") == sqlite {
				ids = append(ids, r.clientID)
			}
		}
		found, err := s.storedClients(sqlite, ids)
		if err != nil {
			return nil, fmt.Errorf("look the acknowledged registrations up: %w", err)
		}
		for id, ok := range found {
			res.stored[id] = ok
		}
	}
	return res, nil
}
