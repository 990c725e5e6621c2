package org

import (
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

func TestRequireDelivery(t *testing.T) {
	for _, tc := range []struct {
		plan string
		ok   bool
	}{{"free", false}, {"basic", false}, {"pro", true}, {"scale", true}} {
		err := RequireDelivery(&Org{Plan: tc.plan}, "Proxies")
		if (err == nil) != tc.ok {
			t.Fatalf("plan %s: %v", tc.plan, err)
		}
		if err != nil {
			e := apierr.From(err)
			if e.Status != 403 || !strings.Contains(e.Message, "Proxies need the pro plan or higher (10,000 images a month)") ||
				!strings.Contains(e.Message, "on the "+tc.plan+" plan") {
				t.Fatalf("plan %s: %d %q", tc.plan, e.Status, e.Message)
			}
		}
	}
	if RequireDelivery(nil, "Proxies") == nil {
		t.Fatal("no organization passed")
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
