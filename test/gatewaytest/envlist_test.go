package gatewaytest

import "testing"

func TestEnvList(t *testing.T) {
	var e EnvList
	for _, v := range []string{"GOGC=400", "A=", "B=x=y"} {
		if err := e.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	for _, v := range []string{"", "NOVALUE", "=x"} {
		if err := e.Set(v); err == nil {
			t.Fatalf("Set(%q) accepted", v)
		}
	}
	if got := e.String(); got != "GOGC=400 A= B=x=y" {
		t.Fatalf("String() = %q", got)
	}
}
