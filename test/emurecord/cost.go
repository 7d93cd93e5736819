package emurecord

// stringCost is about what Go spends on a string beside its bytes when it
// is kept in a map of slices (http.Header, url.Values): its header, a share
// of the slice and of the map's slot. Without it a request of many tiny
// headers would cost far more than it is counted.
const stringCost = 32

// HeadBytes estimates the memory of a kept request line and headers: the
// bytes of each string (method, path, query) plus those of every name and
// value of each map (headers, a parsed query), each of these with
// stringCost.
func HeadBytes(strs []string, maps ...map[string][]string) int {
	n := 0
	for _, s := range strs {
		n += len(s) + stringCost
	}
	for _, m := range maps {
		for k, vs := range m {
			n += len(k) + stringCost
			for _, v := range vs {
				n += len(v) + stringCost
			}
		}
	}
	return n
}
