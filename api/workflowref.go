package api

import "net/url"

// workflowRef is where a service's workflow is: its ID, its Temporal
// namespace, and its page in the Temporal Web UI when the server knows
// the UI (Options.WebUI).
type workflowRef struct {
	WorkflowID        string `json:"workflowId"`
	WorkflowNamespace string `json:"workflowNamespace,omitempty"`
	WorkflowURL       string `json:"workflowUrl,omitempty"`
}

func (s *Server) workflowRef(service string) workflowRef {
	id := s.IDs.Service(service)
	return workflowRef{WorkflowID: id, WorkflowNamespace: s.Namespace, WorkflowURL: workflowURL(s.WebUI, s.Namespace, id)}
}

// workflowURL is a workflow's page in the Temporal Web UI at ui (its
// latest run); "" without a UI or a namespace.
func workflowURL(ui, namespace, id string) string {
	if ui == "" || namespace == "" {
		return ""
	}
	return ui + "/namespaces/" + url.PathEscape(namespace) + "/workflows/" + url.PathEscape(id)
}
