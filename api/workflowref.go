package api

import (
	"net/url"

	"svcbridge/wire"
)

// workflowRef is where a service's workflow is; its Web UI page only when
// the server knows the UI (Options.WebUI).
func (s *Server) workflowRef(service string) wire.WorkflowRef {
	id := s.IDs.Service(service)
	return wire.WorkflowRef{WorkflowID: id, WorkflowNamespace: s.Namespace, WorkflowURL: workflowURL(s.WebUI, s.Namespace, id)}
}

// workflowURL is a workflow's page in the Temporal Web UI at ui (its
// latest run); "" without a UI or a namespace.
func workflowURL(ui, namespace, id string) string {
	if ui == "" || namespace == "" {
		return ""
	}
	return ui + "/namespaces/" + url.PathEscape(namespace) + "/workflows/" + url.PathEscape(id)
}
