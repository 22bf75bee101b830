package spider

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestRunConfigUnknownKeysLinear: each unknown key cost a pass over the
// whole document (go-toml's strict mode, still on though ParseRunConfig
// reports them itself, built each one's error context from it), so 50
// unknown keys beside a long seeds list cost 50 times the list. Counted
// in bytes allocated, not time: 50 unknown keys must cost about what one
// does beside the same list.
func TestRunConfigUnknownKeysLinear(t *testing.T) {
	doc := func(unknown int) []byte {
		var b strings.Builder
		for i := range unknown {
			fmt.Fprintf(&b, "unknown%d = 1\n", i)
		}
		b.WriteString("seeds = [\n")
		for i := range 20_000 {
			fmt.Fprintf(&b, "  \"https://h%d.example/\",\n", i)
		}
		b.WriteString("]\n")
		return []byte(b.String())
	}
	allocated := func(data []byte) float64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := ParseRunConfig(data, "big.toml"); err == nil || !strings.Contains(err.Error(), "big.toml:1: unknown key unknown0") {
			t.Fatalf("error %.200v", err)
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc - before.TotalAlloc)
	}
	one, many := allocated(doc(1)), allocated(doc(maxConfigErrors))
	if many > 2*one {
		t.Errorf("%d unknown keys beside 20,000 seeds allocated %.0f bytes, one %.0f: %.1f×", maxConfigErrors, many, one, many/one)
	}
}

// TestRunConfigManyUnknownKeys: past the unknown keys a mistyped config
// has, a file of them (300,000: minutes of go-toml checking each key
// against those before it for a duplicate) is not decoded: its unknown
// keys are reported, capped, and the values said not checked.
func TestRunConfigManyUnknownKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("fetchers = 0\n")
	for i := range maxConfigErrors + 1 {
		fmt.Fprintf(&b, "unknown%d = 1\n", i)
	}
	_, err := ParseRunConfig([]byte(b.String()), "many.toml")
	if err == nil || !strings.Contains(err.Error(), "many.toml:2: unknown key unknown0") || !strings.Contains(err.Error(), "many.toml: 1 more errors") ||
		!strings.Contains(err.Error(), fmt.Sprintf("many.toml: values not checked: %d unknown keys", maxConfigErrors+1)) || strings.Contains(err.Error(), "fetchers") {
		t.Errorf("error %v", err)
	}
	// A few unknown keys: the values are checked too.
	_, err = ParseRunConfig([]byte("fetchers = 0\nunknown = 1\n"), "few.toml")
	if err == nil || !strings.Contains(err.Error(), "few.toml:2: unknown key unknown") || !strings.Contains(err.Error(), "few.toml:1: fetchers: 0 is out of range") {
		t.Errorf("error %v", err)
	}
}
