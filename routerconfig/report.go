package routerconfig

import (
	"encoding/json"
	"fmt"
	"slices"

	"svcbridge/document"
	"svcbridge/wire"
)

// Bounds of a router report: a version is an ETag, an error a sentence, a
// reason what the router says; a router cannot fail more bridges than a
// document holds.
const (
	MaxReportVersion = 256
	MaxReportText    = 4096
	MaxReportFailed  = 100000
)

var (
	reportFields = document.NewFieldSet("lastUpdated", "version", "error", "failed", "tcpListeners", "tcpConnectors")
	failedFields = document.NewFieldSet("type", "name", "reason")
	// reportTypes are the entities a router side applies and may report.
	reportTypes = []string{EntityTCPListener, EntityTCPConnector, EntityConnector}
)

// DecodeReport reads a router side's report (PUT /agent/router/status),
// refusing unknown fields and values out of their bounds with a
// *document.Error naming the field.
func DecodeReport(body []byte) (wire.RouterReport, error) {
	var r wire.RouterReport
	obj, err := document.ReadJSONFields(body, reportFields)
	if err != nil {
		return r, err
	}
	if v, err := document.JSONField[int64](obj, "lastUpdated", "integer"); err != nil {
		return r, err
	} else if v != nil {
		if *v < 0 {
			return r, document.Errorf("Field 'lastUpdated' must not be negative")
		}
		r.LastUpdated = v
	}
	version, err := boundedText(obj, "version", MaxReportVersion)
	if err != nil {
		return r, err
	}
	if version == nil {
		return r, document.Missing("version")
	}
	r.Version = *version
	if e, err := boundedText(obj, "error", MaxReportText); err != nil {
		return r, err
	} else if e != nil {
		r.Error = *e
	}
	for key, into := range map[string]*int{"tcpListeners": &r.TCPListeners, "tcpConnectors": &r.TCPConnectors} {
		n, err := document.JSONInt(obj, key)
		if err != nil {
			return r, err
		}
		if n != nil && *n < 0 {
			return r, document.Errorf("Field '%s' must not be negative", key)
		}
		if n != nil {
			*into = *n
		}
	}
	r.Failed = []wire.FailedBridge{}
	// Item by item, so the first wrong one ends the reading; the walk of
	// the whole report checked its strings already.
	err = document.JSONObjects(obj, "failed", failedFields, func(i int, item map[string]json.RawMessage) error {
		if i == MaxReportFailed {
			return document.Errorf("Field 'failed' has more than %d entries", MaxReportFailed)
		}
		f, err := decodeFailed(item)
		if err != nil {
			return document.Errorf("Field 'failed[%d]': %s", i, err.Error())
		}
		r.Failed = append(r.Failed, f)
		return nil
	})
	return r, err
}

func decodeFailed(obj map[string]json.RawMessage) (wire.FailedBridge, error) {
	var f wire.FailedBridge
	for _, field := range [...]struct {
		key  string
		into *string
	}{{"type", &f.Type}, {"name", &f.Name}, {"reason", &f.Reason}} {
		key, into := field.key, field.into
		v, err := document.JSONText(obj, key)
		if err != nil {
			return f, err
		}
		if v == nil {
			return f, document.Missing(key)
		}
		if len(*v) > MaxReportText {
			return f, document.Errorf("Field '%s' is longer than %d characters", key, MaxReportText)
		}
		*into = *v
	}
	if !slices.Contains(reportTypes, f.Type) {
		return f, fmt.Errorf("type %q is not one of %v", f.Type, reportTypes)
	}
	return f, nil
}

func boundedText(obj map[string]json.RawMessage, key string, limit int) (*string, error) {
	v, err := document.JSONField[string](obj, key, "string")
	if err != nil || v == nil {
		return v, err
	}
	if len(*v) > limit {
		return nil, document.Errorf("Field '%s' is longer than %d characters", key, limit)
	}
	return v, nil
}

// How far a bridge given to an agent's router has got, as Rollout says.
const (
	// RolloutApplied: the router holds it (its router side reported so).
	RolloutApplied = "applied"
	// RolloutAcknowledged: the agent acknowledged the change; it has no
	// router side that reports more.
	RolloutAcknowledged = "acknowledged"
	// RolloutFailed: the router refused it or cannot serve it.
	RolloutFailed = "failed"
	// RolloutPending: not applied yet.
	RolloutPending = "pending"
)

// Rollout decides how far the bridge of typ named name, given to an
// agent's router by a change the agent has acknowledged (or not), has got,
// from the router side's last report (nil when the agent has none): failed
// when the report names it, with the router's reason; applied, or without
// a router side acknowledged, once acknowledged; else pending, with the
// router side's error (the router unreachable) as the reason.
func Rollout(typ, name string, acknowledged bool, r *wire.RouterReport) (state, reason string) {
	if r != nil {
		for _, f := range r.Failed {
			if f.Type == typ && f.Name == name {
				return RolloutFailed, f.Reason
			}
		}
	}
	switch {
	case acknowledged && r != nil:
		return RolloutApplied, ""
	case acknowledged:
		return RolloutAcknowledged, ""
	case r != nil:
		return RolloutPending, r.Error
	default:
		return RolloutPending, ""
	}
}

// RolledOut reports whether a state counts as rolled out: the router holds
// the bridge, as far as anyone can tell.
func RolledOut(state string) bool { return state == RolloutApplied || state == RolloutAcknowledged }
