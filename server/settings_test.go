package server

import "testing"

// TestPositiveInt pins the one integer setter of both widths: a positive
// decimal that fits the field is set, anything else is refused and leaves
// the field as it was.
func TestPositiveInt(t *testing.T) {
	setInt := positiveInt(func(c *Config) *int { return &c.MaxInFlight })
	setInt64 := positiveInt(func(c *Config) *int64 { return &c.BodyBudgetBytes })
	tests := []struct {
		name, v string
		wide    bool
		want    int64
		ok      bool
	}{
		{"int", "5", false, 5, true},
		{"int with plus sign", "+5", false, 5, true},
		{"int zero", "0", false, 0, false},
		{"int negative", "-1", false, 0, false},
		{"int not a number", "x", false, 0, false},
		{"int empty", "", false, 0, false},
		{"int fraction", "1.5", false, 0, false},
		{"int underscore", "1_000", false, 0, false},
		{"int64 largest", "9223372036854775807", true, 9223372036854775807, true},
		{"int64 overflow", "9223372036854775808", true, 0, false},
		{"int64 zero", "0", true, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			var err error
			var got int64
			if tt.wide {
				err = setInt64(&c, tt.v)
				got = c.BodyBudgetBytes
			} else {
				err = setInt(&c, tt.v)
				got = int64(c.MaxInFlight)
			}
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("set(%q) = %d, %v; want %d, ok=%v", tt.v, got, err, tt.want, tt.ok)
			}
		})
	}
}
