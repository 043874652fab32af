package httpapi

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParseTrustedProxies reads serve's --trusted-proxies: comma-separated
// CIDRs (10.0.0.0/8, fd00::/8); a lone address is its own /32 or /128.
// Empty is none. Every bad entry is named at once.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var bad []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
		} else if a, err := netip.ParseAddr(f); err == nil && a.Zone() == "" {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		} else {
			bad = append(bad, fmt.Sprintf("%q", f))
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("not a CIDR or an address: %s", strings.Join(bad, ", "))
	}
	return out, nil
}

func prefixStrings(ps []netip.Prefix) []string {
	if len(ps) == 0 {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
