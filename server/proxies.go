package server

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strings"
)

// Trusted proxies must be plausible: a list that together trusts a large
// part of the address space lets any caller there forge X-Forwarded-For
// and so choose its own client address, budgets and shares. The check is
// on the union of the entries, not on each (0.0.0.0/1 and 128.0.0.0/1 are
// /0 together): overlapping and adjacent entries are merged, and no merged
// range may hold more addresses than a /8 (IPv4) or a /32 (IPv6), nor all
// of one family's ranges together more than two of those (10.0.0.0/8,
// 172.16.0.0/12 and 192.168.0.0/16 together pass). trust_all_forwarded
// lifts the check, and the gateway then warns at every start.

// The widest plausible trusted range per family, in prefix bits.
const (
	widestTrustedIPv4 = 8
	widestTrustedIPv6 = 32
)

// checkTrustedProxies returns a problem for each family whose trusted
// ranges are implausibly wide, or nil.
func checkTrustedProxies(proxies []netip.Prefix) []string {
	var problems []string
families:
	for _, fam := range []struct {
		name   string
		is4    bool
		widest int
	}{{"IPv4", true, widestTrustedIPv4}, {"IPv6", false, widestTrustedIPv6}} {
		var own []netip.Prefix
		for _, p := range proxies {
			if p.Addr().Is4() == fam.is4 {
				own = append(own, p.Masked())
			}
		}
		if len(own) == 0 {
			continue
		}
		bits := 32
		if !fam.is4 {
			bits = 128
		}
		limit := new(big.Int).Lsh(big.NewInt(1), uint(bits-fam.widest))
		total := new(big.Int)
		for _, r := range mergeRanges(own) {
			n := r.size()
			total.Add(total, n)
			if n.Cmp(limit) > 0 {
				problems = append(problems, fmt.Sprintf(
					"trusted_proxies: together the entries trust %s through %s, wider than a /%d, so any caller there could forge X-Forwarded-For and pick its own client address and budgets; list only your proxies' addresses (or set trust_all_forwarded: true if every caller really comes through your proxies)",
					r.first, r.last, fam.widest))
				continue families
			}
		}
		if total.Cmp(new(big.Int).Lsh(limit, 1)) > 0 {
			problems = append(problems, fmt.Sprintf(
				"trusted_proxies: the %s entries together trust more addresses than two /%d ranges, so most callers could forge X-Forwarded-For; list only your proxies' addresses (or set trust_all_forwarded: true)",
				fam.name, fam.widest))
		}
	}
	return problems
}

// addrRange is the inclusive range of addresses first through last.
type addrRange struct{ first, last netip.Addr }

func (r addrRange) size() *big.Int {
	a, b := r.first.As16(), r.last.As16()
	n := new(big.Int).Sub(new(big.Int).SetBytes(b[:]), new(big.Int).SetBytes(a[:]))
	return n.Add(n, big.NewInt(1))
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// mergeRanges returns the union of prefixes of one family as sorted,
// disjoint, non-adjacent ranges.
func mergeRanges(prefixes []netip.Prefix) []addrRange {
	rs := make([]addrRange, 0, len(prefixes))
	for _, p := range prefixes {
		rs = append(rs, addrRange{p.Masked().Addr(), lastAddr(p)})
	}
	slices.SortFunc(rs, func(a, b addrRange) int { return a.first.Compare(b.first) })
	var out []addrRange
	for _, r := range rs {
		if n := len(out); n > 0 {
			prev := &out[n-1]
			// Overlapping, or adjacent (the previous range's next address
			// is this one's first).
			if next := prev.last.Next(); !next.IsValid() || r.first.Compare(next) <= 0 {
				if r.last.Compare(prev.last) > 0 {
					prev.last = r.last
				}
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// trustAllWarning is what the gateway logs at start when
// trust_all_forwarded lifts the check.
func trustAllWarning(proxies []netip.Prefix) string {
	shown := make([]string, 0, len(proxies))
	for _, p := range proxies {
		shown = append(shown, p.String())
	}
	return "TRUST_ALL_FORWARDED IS SET: every caller from " + strings.Join(shown, ",") +
		" may set X-Forwarded-For and so choose its own client address, per-address budgets and shares; only safe when nothing but your proxies can reach the gateway"
}
