package workflows

// RetryBackoff lets the tests of package workflows_test, which start the
// workflows through temporalclient, shorten the service workflow's wait.
var RetryBackoff = &retryBackoff
