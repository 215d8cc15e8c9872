package callers_test

import (
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
)

func TestParseIdemWindow(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"retention": 0, "0": callers.IdemOff, "0s": callers.IdemOff, "10m": 10 * time.Minute, "1h30m": 90 * time.Minute,
	} {
		got, err := callers.ParseIdemWindow(in)
		if err != nil || got != want {
			t.Errorf("ParseIdemWindow(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, _ := callers.ParseIdemWindow(callers.FormatIdemWindow(got)); back != got {
			t.Errorf("FormatIdemWindow(%v) does not read back: %v", got, back)
		}
	}
	for _, in := range []string{"", "-1s", "forever", "10"} {
		const want = `must be a duration such as 10m, 0 for no deduplication, or "retention", got `
		if _, err := callers.ParseIdemWindow(in); err == nil || err.Error() != want+`"`+in+`"` {
			t.Errorf("ParseIdemWindow(%q) error = %v", in, err)
		}
	}
}
