package wire

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestServiceAppendJSONIsMarshal: AppendJSON writes what json.Marshal
// writes, byte for byte, for services whose every field (found by
// reflection, so a field added to Service is filled too) is set at
// random: strings with what JSON and HTML escape, invalid UTF-8 and
// U+2028, nil and set pointers and lists, timestamps in other zones and
// out of RFC 3339's range (an error, as json.Marshal's).
func TestServiceAppendJSONIsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for i := range 20000 {
		var s Service
		fill(r, reflect.ValueOf(&s).Elem())
		want, wantErr := json.Marshal(&s)
		prefix := []byte("[1,")
		got, err := s.AppendJSON(prefix)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("service %d: AppendJSON error %v, json.Marshal's %v\n%#v", i, err, wantErr, s)
		}
		if err == nil && (!bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want)) {
			t.Fatalf("service %d: AppendJSON wrote\n%s\njson.Marshal\n%s", i, got, want)
		}
		if _, ok := s.appendJSON(nil); ok && s.Kubernetes == nil && s.Distribution == nil {
			fast++
		}
	}
	if fast < 5000 {
		t.Errorf("only %d services of 20000 encoded without json.Marshal", fast)
	}
}

// fill sets v, and all it holds, at random.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Interface().(type) {
	case Time:
		zones := []*time.Location{time.UTC, time.UTC, time.FixedZone("", 3600+30*60), time.FixedZone("", -11*3600), time.FixedZone("", 25*3600)}
		years := []int{2026, 2026, 2026, 2026, 1999, 0, 9999, 10000, -1}
		at := time.Date(years[r.IntN(len(years))], time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(3)*r.IntN(1e9), zones[r.IntN(len(zones))])
		if r.IntN(20) == 0 {
			at = time.Time{}
		}
		v.Set(reflect.ValueOf(Time(at)))
		return
	case json.RawMessage:
		if r.IntN(10) == 0 {
			v.SetBytes([]byte(`{"annotations":{"a":"<b>"}, "x": [1, 2]}`))
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomString(r))
	case reflect.Int, reflect.Int64:
		v.SetInt(r.Int64N(1<<40) - 1<<39)
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Pointer:
		if r.IntN(3) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(r, v.Elem())
		}
	case reflect.Slice:
		if r.IntN(10) > 0 && v.Type().Elem().Kind() != reflect.String {
			return // a distribution in one service of ten or so
		}
		n := r.IntN(4) - 1 // nil, empty or a few
		if n >= 0 {
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				fill(r, v.Index(i))
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(r, v.Field(i))
		}
	default:
		panic("fill: no rule for " + v.Type().String())
	}
}

// randomString is mostly plain text, or empty, with what JSON escapes.
func randomString(r *rand.Rand) string {
	parts := []string{"svc-a", "203.0.113.10", "edge", "<script>", "a&b", `"q"`, `\`, "\n\t\r\b\f", "\x00\x1f\x7f",
		"é", "日本", "\u2028\u2029", "\xff", "\xe2\x80", "🙂", " ", "ok"}
	var b []byte
	for range r.IntN(4) {
		b = append(b, parts[r.IntN(len(parts))]...)
	}
	return string(b)
}

func BenchmarkServiceAppendJSON(b *testing.B) {
	ep := "203.0.113.10:443"
	s := &Service{Name: "f-00001", Tags: []string{"edge"}, Type: "external", Resource: "203.0.113.10", TargetPort: 443,
		DefaultBridge: "default-router", BridgePort: 10024, ServiceEndpoint: &ep, ProvisioningStatus: "ready",
		Generation: 1, ObservedGeneration: 1, CreatedAt: Time(time.Now()), UpdatedAt: Time(time.Now()),
		Placement: &Placement{ConnectorAgent: "3f2a1c4e-0000-4000-8000-000000000001", HubAgent: "3f2a1c4e-0000-4000-8000-000000000001",
			ConnectorAgentName: "hub", HubAgentName: "hub"},
		ResourceName: "203.0.113.10", DefaultBridgeName: "default-router", WorkflowRef: WorkflowRef{WorkflowID: "svcbridge-service-f-00001"}}
	b.Run("AppendJSON", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = s.AppendJSON(buf[:0])
		}
	})
	b.Run("json.Encoder", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for b.Loop() {
			buf.Reset()
			enc.Encode(s)
		}
	})
}
