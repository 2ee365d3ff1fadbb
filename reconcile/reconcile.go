// Package reconcile is what svcbridge's Temporal histories are made of,
// at the ground floor of the tree (it imports no other svcbridge package):
// the order of a service's reconcile pass (pass.go), the name of every
// activity (activities.go), every type a history carries as a workflow's
// or an activity's input or result (payloads.go and the pass's types), and
// each workflow.GetVersion change with the recorded histories that cover
// it (versions.go). Package workflows orchestrates with them, package
// activities implements them, the worker registers them.
//
// Payloads are JSON without Go type names: a recorded history replays as
// long as their JSON shapes do not change.
package reconcile
