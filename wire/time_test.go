package wire

import (
	"encoding/json"
	"testing"
	"time"
)

// Clients have always read time.Time's JSON: Time must send the same
// text, and read it back to the same moment.
func TestTimeIsSentAsTimeTimeWas(t *testing.T) {
	for _, at := range []time.Time{
		{},
		time.Date(2026, 12, 6, 23, 40, 1, 0, time.UTC),
		time.Date(2026, 12, 6, 23, 40, 1, 123456789, time.UTC),
		time.Date(2026, 12, 7, 0, 40, 1, 5000, time.FixedZone("", 3600)),
	} {
		want, _ := json.Marshal(at)
		got, err := json.Marshal(Time(at))
		if err != nil || string(got) != string(want) {
			t.Errorf("%v: sent %s (%v), time.Time sends %s", at, got, err, want)
		}
		var back Time
		if err := json.Unmarshal(want, &back); err != nil || !time.Time(back).Equal(at) {
			t.Errorf("%s read as %v (%v)", want, time.Time(back), err)
		}
	}
	if _, err := json.Marshal(Time(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))); err == nil {
		t.Error("a year past 9999 was sent; RFC 3339 has no room for it")
	}
	var v struct{ At *Time }
	if err := json.Unmarshal([]byte(`{"At":null}`), &v); err != nil || v.At != nil {
		t.Errorf("null read as %v (%v), want nil", v.At, err)
	}
	if err := json.Unmarshal([]byte(`{"At":"yesterday"}`), &v); err == nil {
		t.Error(`"yesterday" was read as a time`)
	}
}
