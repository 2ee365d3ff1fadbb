package workflows

import (
	"fmt"
	"time"

	"svcbridge/reconcile"
)

// failed is the streak after one more failed pass, ended at now.
func failed(f reconcile.FailureStreak, now time.Time) reconcile.FailureStreak {
	if f.Attempts == 0 {
		f.Since = now
	}
	f.Attempts++
	return f
}

// retryWait is how long the workflow waits, unless signalled, before the
// next pass after attempts failed passes in a row: none after the first
// (the fast path's: the retry, a regular activity, makes the failure an
// event at once), then RetryBackoff doubling up to MaxRetryBackoff, as
// Temporal's retry policy did.
func (t Timing) retryWait(attempts int) time.Duration {
	wait := time.Duration(0)
	for n := 2; n <= attempts && wait < t.MaxRetryBackoff; n++ {
		wait = max(2*wait, t.RetryBackoff)
	}
	return min(wait, t.MaxRetryBackoff)
}

// since is when the streak began, as the Web UI and describe show times.
func since(f reconcile.FailureStreak) string {
	return f.Since.UTC().Format("2006-01-02 15:04:05 UTC")
}

// summary is a retried pass's summary on the Web UI's timeline. It is set
// before the pass runs and stays on its row once the pass succeeds: it
// says what was true then, in words that stay true.
func summary(f reconcile.FailureStreak, service string) string {
	return fmt.Sprintf("Reconcile service %s: attempt %d, after %d failed since %s", service, f.Attempts+1, f.Attempts, since(f))
}

// details follow the failure in the current details; none for a run begun
// before reconcile.ChangeFailureEvents, whose retries Temporal counts.
func details(f reconcile.FailureStreak) string {
	if f.Attempts == 0 {
		return ""
	}
	return fmt.Sprintf("\n\nfailing since %s, %d failed attempts", since(f), f.Attempts)
}

// retrying says what comes after a failed pass.
func (t Timing) retrying(f reconcile.FailureStreak) string {
	if f.Attempts == 0 {
		return "Temporal retries the reconcile (signal reconcile to retry now)"
	}
	return fmt.Sprintf("failing since %s, %d failed attempts; retrying in %s (signal reconcile to retry now)",
		since(f), f.Attempts, t.retryWait(f.Attempts))
}
