package wire

import "time"

// Time is a moment as the API sends it: RFC 3339 with nanoseconds in UTC
// or with the offset it has, as time.Time's JSON. It encodes as text, not
// through time.Time's MarshalJSON, whose output encoding/json then checks
// byte by byte: through MarshalJSON and that check, a service's two
// timestamps were half of encoding it. time.Time(t) is the moment.
type Time time.Time

func (t Time) MarshalText() ([]byte, error) { return time.Time(t).MarshalText() }

func (t *Time) UnmarshalText(b []byte) error { return (*time.Time)(t).UnmarshalText(b) }
