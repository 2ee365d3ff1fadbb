package reconcile

// A Change is a workflow.GetVersion change: a change of a workflow's
// commands that runs begun before it replay without. Each has two recorded
// histories in workflows/testdata: Before, of a run begun before the
// change (no marker of it), and After, of a run that took it; both must
// replay against today's code (workflows' TestEveryChangeHasItsHistories).
// A change is removed, with its old branch and its Before history, only
// when no release that could have begun such a run is supported any more.
type Change struct {
	ID      string
	Version int
	// Before and After are file names in workflows/testdata.
	Before, After string
}

// The changes, and Changes, the list of them all.
var (
	// ChangeFailureEvents: a failed pass is retried by the service workflow's
	// own backoff as activities of one attempt (each failure an event),
	// and a reconcile signal from outside svcbridge is recorded; before
	// it, Temporal retried the pass.
	ChangeFailureEvents = Change{ID: "service-failure-events", Version: 1,
		Before: "service%2Fcheckout@temporal-retries.json", After: "service%2Fcheckout.json"}
	// ChangeOneLocalPass: the service workflow's fast path runs the whole
	// pass as one local activity (ActivityReconcileService), one marker in
	// the history; before it, each step was its own (plan, routers,
	// finish), the Kubernetes and queue steps regular activities.
	ChangeOneLocalPass = Change{ID: "service-one-local-pass", Version: 1,
		Before: "service%2Fcontinued@local-steps.json", After: "service%2Fcontinued.json"}
	// ChangeQueueOutlook: the agent queue workflow asks the store before each
	// window how many agents are claimable; before it, it ran a window of
	// children every round.
	ChangeQueueOutlook = Change{ID: "agent-queue-outlook", Version: 1,
		Before: "agents%2Fqueue@blind.json", After: "agents%2Fqueue.json"}

	Changes = []Change{ChangeFailureEvents, ChangeQueueOutlook, ChangeOneLocalPass}
)
