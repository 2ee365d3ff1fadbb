package workflows

import (
	"fmt"
	"time"
)

// FailureStreak is how long a service's passes have failed in a row: since
// when (the end of the first failed pass) and how many. A reconcile signal
// does not end it, only a pass that succeeds.
type FailureStreak struct {
	Since    time.Time `json:"since,omitzero"`
	Attempts int       `json:"attempts,omitzero"`
}

// failed is the streak after one more failed pass, ended at now.
func (f FailureStreak) failed(now time.Time) FailureStreak {
	if f.Attempts == 0 {
		f.Since = now
	}
	f.Attempts++
	return f
}

// retryWait is how long the workflow waits, unless signalled, before the
// next pass after attempts failed passes in a row: none after the first
// (the fast path's: the retry, a regular activity, makes the failure an
// event at once), then retryBackoff doubling up to maxRetryBackoff, as
// Temporal's retry policy did.
func retryWait(attempts int) time.Duration {
	wait := time.Duration(0)
	for n := 2; n <= attempts && wait < maxRetryBackoff; n++ {
		wait = max(2*wait, retryBackoff)
	}
	return min(wait, maxRetryBackoff)
}

// since is when the streak began, as the Web UI and describe show times.
func (f FailureStreak) since() string {
	return f.Since.UTC().Format("2006-01-02 15:04:05 UTC")
}

// summary is a retried pass's summary on the Web UI's timeline.
func (f FailureStreak) summary(service string) string {
	return fmt.Sprintf("Reconcile service %s: attempt %d, failing since %s", service, f.Attempts+1, f.since())
}

// details follow the failure in the current details; none for a run begun
// before failureEventsChange, whose retries Temporal counts.
func (f FailureStreak) details() string {
	if f.Attempts == 0 {
		return ""
	}
	return fmt.Sprintf("\n\nfailing since %s, %d failed attempts", f.since(), f.Attempts)
}

// retrying says what comes after a failed pass.
func (f FailureStreak) retrying() string {
	if f.Attempts == 0 {
		return "Temporal retries the reconcile (signal reconcile to retry now)"
	}
	return fmt.Sprintf("failing since %s, %d failed attempts; retrying in %s (signal reconcile to retry now)",
		f.since(), f.Attempts, retryWait(f.Attempts))
}
