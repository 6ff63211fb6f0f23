package testutil

import "testing"

func TestParsePair(t *testing.T) {
	got, ok := parsePair("siw1:veth2:10.79.0.1,siw2:veth3:10.79.0.2")
	want := [2]VethEnd{{"siw1", "veth2", "10.79.0.1"}, {"siw2", "veth3", "10.79.0.2"}}
	if !ok || got != want {
		t.Errorf("parsePair = %+v, %v; want %+v", got, ok, want)
	}
	for _, bad := range []string{"", "siw1:veth2:10.79.0.1", "siw1:veth2,siw2:veth3", "a:b:c,d:e:f,g:h:i", "siw1:veth2:,siw2:veth3:10.79.0.2"} {
		if _, ok := parsePair(bad); ok {
			t.Errorf("parsePair(%q) accepted", bad)
		}
	}
}
