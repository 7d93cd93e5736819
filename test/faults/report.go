package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// phaseFigures are what one phase's calls show.
type phaseFigures struct {
	calls, failed, acceptedFailed int
	codes                         map[string]int
	wrong                         map[string]int
	// recovery is how long after the fault ended the last call started
	// after it still failed (0: none did); unrecovered names call kinds
	// that failed during the fault and were not served once after it.
	recovery    time.Duration
	unrecovered []string
	// late counts failed calls started more than recoveryBound after the
	// fault ended: a lockout.
	late           int
	acked, lostRow int
	// slowest is the failure that set recovery, named.
	slowest string
}

// figures sums up the calls that ended during p: a call under way when
// the next fault is injected (at p.end) is that fault's.
func figures(p phase, records []record, stored map[string]bool) phaseFigures {
	f := phaseFigures{codes: map[string]int{}, wrong: map[string]int{}}
	failedDuring := map[string]bool{}
	servedAfter := map[string]bool{}
	for _, r := range records {
		if r.end.Before(p.start) || !r.end.Before(p.end) {
			continue
		}
		group := r.target + " " + string(r.kind)
		after := !r.start.Before(p.restored)
		f.calls++
		if r.wrong != "" {
			f.wrong[r.wrong]++
		}
		if r.clientID != "" {
			f.acked++
			if !stored[r.clientID] {
				f.lostRow++
			}
		}
		if r.ok {
			if after {
				servedAfter[group] = true
			}
			continue
		}
		f.failed++
		if r.accepted {
			f.acceptedFailed++
		}
		f.codes[r.outcome]++
		if !after {
			failedDuring[group] = true
			continue
		}
		if d := r.end.Sub(p.restored); d > f.recovery {
			f.recovery = d
			f.slowest = fmt.Sprintf("%s %s: %s after %s", r.target, r.kind, r.outcome, r.end.Sub(r.start).Round(time.Millisecond))
		}
		if r.start.Sub(p.restored) > recoveryBound {
			f.late++
		}
	}
	for g := range failedDuring {
		if !servedAfter[g] {
			f.unrecovered = append(f.unrecovered, g)
		}
	}
	sort.Strings(f.unrecovered)
	return f
}

// report prints one row per fault and returns what broke the run's
// bounds.
func report(out io.Writer, res *results) error {
	var problems []string
	base := figures(res.baseline, res.records, res.stored)
	if base.failed > 0 {
		problems = append(problems, fmt.Sprintf("baseline: %d of %d calls failed before any fault (%s)", base.failed, base.calls, counts(base.codes)))
	}
	fmt.Fprintln(out, "| fault | calls | failed | accepted but failed | codes seen | recovery after the fault ended | acknowledged rows lost |")
	fmt.Fprintln(out, "| --- | --- | --- | --- | --- | --- | --- |")
	fmt.Fprintf(out, "| none (baseline) | %d | %d | %d | %s | – | %d of %d |\n", base.calls, base.failed, base.acceptedFailed, counts(base.codes), base.lostRow, base.acked)
	for _, p := range res.phases {
		f := figures(p, res.records, res.stored)
		recovery := "–"
		if !p.rolling {
			recovery = fmt.Sprintf("%.2f s", f.recovery.Seconds())
			if len(f.unrecovered) > 0 {
				recovery = "not recovered: " + strings.Join(f.unrecovered, ", ")
			}
		}
		fmt.Fprintf(out, "| %s | %d | %d | %d | %s | %s | %d of %d |\n", p.name, f.calls, f.failed, f.acceptedFailed, counts(f.codes), recovery, f.lostRow, f.acked)
		switch {
		case !p.rolling && f.failed == 0:
			problems = append(problems, p.name+": no call failed: the fault did not bite")
		case p.rolling && f.acceptedFailed > 0:
			problems = append(problems, fmt.Sprintf("%s: %d accepted calls failed", p.name, f.acceptedFailed))
		case !p.rolling && (len(f.unrecovered) > 0 || f.recovery > recoveryBound || f.late > 0):
			problems = append(problems, fmt.Sprintf("%s: callers not served again within %s of the return (recovery %s, the last failure %s; %d failures after it, unrecovered %v)",
				p.name, recoveryBound, f.recovery.Round(time.Millisecond), f.slowest, f.late, f.unrecovered))
		}
		if len(f.wrong) > 0 {
			problems = append(problems, fmt.Sprintf("%s: the fault was answered as the caller's doing: %s", p.name, counts(f.wrong)))
		}
		if f.lostRow > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d acknowledged rows lost", p.name, f.lostRow))
		}
	}
	acked, lost := 0, 0
	for _, ok := range res.stored {
		acked++
		if !ok {
			lost++
		}
	}
	fmt.Fprintf(out, "\nAcknowledged registrations in all: %d, rows lost: %d; calls in all: %d\n", acked, lost, len(res.records))
	if len(problems) > 0 {
		fmt.Fprintln(out, "\nFAIL:\n- "+strings.Join(problems, "\n- "))
		return errors.New(strings.Join(problems, "; "))
	}
	fmt.Fprintln(out, "\nPASS: 0 accepted calls failed in the rolling restart; every caller served again within 2 s of each dependency's return, no lockout; 0 acknowledged rows lost; no fault answered as invalid_token or a spent budget")
	return nil
}

// counts prints a tally, largest first.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "–"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
