package server

import (
	"context"
	"slices"
	"testing"
)

// TestBodyHeadroom: the soft memory limit follows twice the body bytes
// held and half a MiB a request in flight (up to the configured limit
// again), in whole steps rounded up, on top of the configured limit; the runtime is
// re-tuned only when the step changes; an operator's GOMEMLIMIT and a
// limit that is off are left alone, and stop restores the configured
// limit.
func TestBodyHeadroom(t *testing.T) {
	const limit = 24 << 20
	var held int64
	var sets []int64
	h := &bodyHeadroom{limit: limit, buffered: func() int64 { return held }, inFlight: func() int64 { return 0 },
		set: func(n int64) int64 { sets = append(sets, n); return 0 }, applied: limit}
	for _, step := range []struct {
		held int64
		want []int64 // the limits set so far
	}{
		{0, nil},
		{1, []int64{limit + headroomStep}},
		{headroomStep / 2, []int64{limit + headroomStep}},
		{headroomStep/2 + 1, []int64{limit + headroomStep, limit + 2*headroomStep}},
		{32 << 20, []int64{limit + headroomStep, limit + 2*headroomStep, limit + 64<<20}},
		{0, []int64{limit + headroomStep, limit + 2*headroomStep, limit + 64<<20, limit}},
	} {
		held = step.held
		h.adjust(context.Background())
		if !slices.Equal(sets, step.want) {
			t.Fatalf("holding %d bytes: limits set %v, want %v", step.held, sets, step.want)
		}
	}

	// Requests in flight: half a MiB each, in whole steps, up to the
	// configured limit again, on top of the bodies' room.
	var inFlight int64
	h = &bodyHeadroom{limit: limit, buffered: func() int64 { return held }, inFlight: func() int64 { return inFlight },
		set: func(n int64) int64 { return 0 }, applied: limit}
	for _, c := range []struct{ held, inFlight, want int64 }{
		{0, 0, limit},
		{0, 1, limit + headroomStep},
		{0, 2, limit + headroomStep},
		{0, 3, limit + 2*headroomStep},
		{0, 48, 2 * limit},
		{0, 10_000, 2 * limit},
		{headroomStep, 2, limit + 3*headroomStep},
		{32 << 20, 10_000, limit + 64<<20 + limit},
	} {
		held, inFlight = c.held, c.inFlight
		h.adjust(context.Background())
		if h.applied != c.want {
			t.Fatalf("%d body bytes, %d requests: limit %d, want %d", c.held, c.inFlight, h.applied, c.want)
		}
	}

	for _, tc := range []struct {
		name  string
		env   string
		limit int64
	}{
		{"GOMEMLIMIT wins", "1GiB", limit},
		{"limit off", "", memoryLimitOff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := boundDefaults(Default())
			cfg.MemoryLimit = tc.limit
			g := &Gateway{cfg: cfg}
			var set []int64
			stop := g.startBodyHeadroom(context.Background(), func(k string) string {
				if k == "GOMEMLIMIT" {
					return tc.env
				}
				return ""
			}, runtimeTuner{setMemoryLimit: func(n int64) int64 { set = append(set, n); return 0 }})
			stop()
			if len(set) != 0 {
				t.Fatalf("the limit was set to %v", set)
			}
		})
	}
}
