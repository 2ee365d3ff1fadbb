package wire

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends s as json.Marshal encodes it, byte for byte
// (TestServiceAppendJSONIsMarshal holds it to that for every field).
// Encoding thousands of services was most of a whole list's time, spent
// in encoding/json's reflection; this writes the fields in order. A
// service with a Kubernetes block or a distribution, which lists do not
// carry for most services, is handed to json.Marshal.
func (s *Service) AppendJSON(b []byte) ([]byte, error) {
	if s.Kubernetes == nil && s.Distribution == nil {
		if out, ok := s.appendJSON(b); ok {
			return out, nil
		}
	}
	out, err := json.Marshal(s)
	return append(b, out...), err
}

// appendJSON is AppendJSON for a service without a Kubernetes block or a
// distribution; false for a timestamp that RFC 3339 cannot hold, which
// json.Marshal refuses with its error.
func (s *Service) appendJSON(b []byte) (_ []byte, ok bool) {
	b = append(b, `{"name":`...)
	b = appendString(b, s.Name)
	b = append(b, `,"tags":`...)
	if s.Tags == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, tag := range s.Tags {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, tag)
		}
		b = append(b, ']')
	}
	b = appendField(b, "type", s.Type)
	b = appendField(b, "resource", s.Resource)
	b = append(b, `,"targetPort":`...)
	b = strconv.AppendInt(b, int64(s.TargetPort), 10)
	b = appendField(b, "defaultBridge", s.DefaultBridge)
	if s.ServicePort != nil {
		b = append(b, `,"servicePort":`...)
		b = strconv.AppendInt(b, int64(*s.ServicePort), 10)
	}
	if s.K8sType != nil {
		b = appendField(b, "k8sType", *s.K8sType)
	}
	b = append(b, `,"kubernetes":null,"bridgePort":`...)
	b = strconv.AppendInt(b, int64(s.BridgePort), 10)
	b = appendNullable(b, "serviceEndpoint", s.ServiceEndpoint)
	b = appendField(b, "provisioningStatus", s.ProvisioningStatus)
	b = appendNullable(b, "provisioningError", s.ProvisioningError)
	b = append(b, `,"generation":`...)
	b = strconv.AppendInt(b, s.Generation, 10)
	b = append(b, `,"observedGeneration":`...)
	b = strconv.AppendInt(b, s.ObservedGeneration, 10)
	b = append(b, `,"reconcileRequest":`...)
	b = strconv.AppendInt(b, s.ReconcileRequest, 10)
	b = append(b, `,"observedReconcileRequest":`...)
	b = strconv.AppendInt(b, s.ObservedReconcileRequest, 10)
	var err1, err2 error
	b = append(b, `,"createdAt":"`...)
	b, err1 = time.Time(s.CreatedAt).AppendText(b)
	b = append(b, `","updatedAt":"`...)
	b, err2 = time.Time(s.UpdatedAt).AppendText(b)
	if err1 != nil || err2 != nil {
		return b, false
	}
	b = append(b, `","placement":`...)
	if p := s.Placement; p == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"connectorAgent":`...)
		b = appendString(b, p.ConnectorAgent)
		b = appendField(b, "hubAgent", p.HubAgent)
		b = appendField(b, "connectorAgentName", p.ConnectorAgentName)
		b = appendField(b, "hubAgentName", p.HubAgentName)
		b = append(b, '}')
	}
	b = appendField(b, "resourceName", s.ResourceName)
	b = appendField(b, "defaultBridgeName", s.DefaultBridgeName)
	b = appendField(b, "workflowId", s.WorkflowID)
	if s.WorkflowNamespace != "" {
		b = appendField(b, "workflowNamespace", s.WorkflowNamespace)
	}
	if s.WorkflowURL != "" {
		b = appendField(b, "workflowUrl", s.WorkflowURL)
	}
	if s.ProvisioningMessage != "" {
		b = appendField(b, "provisioningMessage", s.ProvisioningMessage)
	}
	return append(b, '}'), true
}

// appendField appends ,"key":value, a string field after the first.
func appendField(b []byte, key, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

// appendNullable appends ,"key":value, null for nil.
func appendNullable(b []byte, key string, value *string) []byte {
	if value != nil {
		return appendField(b, key, *value)
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	return append(b, `":null`...)
}

// appendString appends s quoted as json.Marshal quotes a string: HTML's
// <, > and & escaped, invalid UTF-8 as U+FFFD, and U+2028 and U+2029
// escaped for JavaScript.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
