package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"svcbridge/service"
)

// BuildService is the Kubernetes Service for a bridged Service (seed 000's
// worked object): the svcbridge labels, the router pods as selector, one TCP
// port named iofog-service from servicePort to bridgePort (the hub
// tcpListener), and the tags as annotations (service.Annotations; nil when
// there are none). k8sType is LoadBalancer, ClusterIP or NodePort. opts
// (spec.kubernetes, nil when absent) adds the options it declares, its
// annotations next to the tags' and its labels under svcbridge's own;
// what it leaves out stays unset here (see withServerDefaults).
func BuildService(cfg Config, name string, servicePort, bridgePort int, k8sType string, tags []string, opts *service.Kubernetes) *corev1.Service {
	cfg = cfg.WithDefaults()
	if opts == nil {
		opts = &service.Kubernetes{}
	}
	annotations := service.Annotations(tags)
	maps.Copy(annotations, opts.Annotations)
	if len(annotations) == 0 {
		annotations = nil
	}
	labels := maps.Clone(opts.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, cfg.Labels()) // svcbridge's own labels always win
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   cfg.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceType(k8sType),
			Selector: cfg.Selector(),
			Ports: []corev1.ServicePort{{
				Name:       PortName,
				Port:       int32(servicePort),
				TargetPort: intstr.FromInt32(int32(bridgePort)),
				Protocol:   corev1.ProtocolTCP,
			}},
			LoadBalancerSourceRanges:      slices.Clone(opts.LoadBalancerSourceRanges),
			ExternalTrafficPolicy:         corev1.ServiceExternalTrafficPolicy(opts.ExternalTrafficPolicy),
			LoadBalancerClass:             clonePtr(opts.LoadBalancerClass),
			SessionAffinity:               corev1.ServiceAffinity(opts.SessionAffinity),
			AllocateLoadBalancerNodePorts: clonePtr(opts.AllocateLoadBalancerNodePorts),
		},
	}
	if opts.InternalTrafficPolicy != "" {
		p := corev1.ServiceInternalTrafficPolicy(opts.InternalTrafficPolicy)
		svc.Spec.InternalTrafficPolicy = &p
	}
	if c := opts.SessionAffinityConfig; c != nil {
		svc.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		if c.ClientIP != nil {
			svc.Spec.SessionAffinityConfig.ClientIP = &corev1.ClientIPConfig{}
			if c.ClientIP.TimeoutSeconds != nil {
				svc.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds = ptr(int32(*c.ClientIP.TimeoutSeconds))
			}
		}
	}
	if opts.IPFamilyPolicy != "" {
		svc.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicy(opts.IPFamilyPolicy))
	}
	for _, f := range opts.IPFamilies {
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, corev1.IPFamily(f))
	}
	return svc
}

// withServerDefaults is desired as kube-apiserver stores it: the options
// desired leaves unset get Kubernetes' defaults (v1.34 SetDefaults_Service
// and the IP allocator), so that removing an option from a svcbridge
// Service puts the default back, and a hand edit of one is seen. The IP
// families stay as the server picks them unless desired names them.
func withServerDefaults(desired *corev1.Service) *corev1.Service {
	d := desired.DeepCopy()
	s := &d.Spec
	lb := s.Type == corev1.ServiceTypeLoadBalancer
	if s.ExternalTrafficPolicy == "" && (lb || s.Type == corev1.ServiceTypeNodePort) {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if s.InternalTrafficPolicy == nil {
		s.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
	if s.SessionAffinity == corev1.ServiceAffinityClientIP {
		if s.SessionAffinityConfig == nil {
			s.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		}
		if s.SessionAffinityConfig.ClientIP == nil {
			s.SessionAffinityConfig.ClientIP = &corev1.ClientIPConfig{}
		}
		if s.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
			s.SessionAffinityConfig.ClientIP.TimeoutSeconds = ptr(int32(service.DefaultAffinityTimeout))
		}
	}
	if s.IPFamilyPolicy == nil {
		s.IPFamilyPolicy = ptr(corev1.IPFamilyPolicySingleStack)
	}
	if lb && s.AllocateLoadBalancerNodePorts == nil {
		s.AllocateLoadBalancerNodePorts = ptr(true)
	}
	return d
}

// optionField is one Kubernetes Service field spec.kubernetes sets, as
// desired (after withServerDefaults) and live have it.
type optionField struct {
	path             string
	want, have       any // comparable with reflect.DeepEqual
	wantSet, haveSet bool
}

// optionFields lists the option fields UpToDate compares and servicePatch
// writes. ipFamilies is listed only when desired names them.
func optionFields(live, desired *corev1.Service) []optionField {
	l, d := &live.Spec, &desired.Spec
	fields := []optionField{
		{"/spec/loadBalancerSourceRanges", d.LoadBalancerSourceRanges, l.LoadBalancerSourceRanges,
			len(d.LoadBalancerSourceRanges) > 0, len(l.LoadBalancerSourceRanges) > 0},
		{"/spec/externalTrafficPolicy", d.ExternalTrafficPolicy, l.ExternalTrafficPolicy,
			d.ExternalTrafficPolicy != "", l.ExternalTrafficPolicy != ""},
		{"/spec/internalTrafficPolicy", d.InternalTrafficPolicy, l.InternalTrafficPolicy,
			d.InternalTrafficPolicy != nil, l.InternalTrafficPolicy != nil},
		{"/spec/loadBalancerClass", d.LoadBalancerClass, l.LoadBalancerClass,
			d.LoadBalancerClass != nil, l.LoadBalancerClass != nil},
		{"/spec/sessionAffinity", d.SessionAffinity, l.SessionAffinity,
			d.SessionAffinity != "", l.SessionAffinity != ""},
		{"/spec/sessionAffinityConfig", d.SessionAffinityConfig, l.SessionAffinityConfig,
			d.SessionAffinityConfig != nil, l.SessionAffinityConfig != nil},
		{"/spec/ipFamilyPolicy", d.IPFamilyPolicy, l.IPFamilyPolicy,
			d.IPFamilyPolicy != nil, l.IPFamilyPolicy != nil},
		{"/spec/allocateLoadBalancerNodePorts", d.AllocateLoadBalancerNodePorts, l.AllocateLoadBalancerNodePorts,
			d.AllocateLoadBalancerNodePorts != nil, l.AllocateLoadBalancerNodePorts != nil},
	}
	if len(d.IPFamilies) > 0 {
		fields = append(fields, optionField{"/spec/ipFamilies", d.IPFamilies, l.IPFamilies, true, len(l.IPFamilies) > 0})
	}
	return fields
}

func (f optionField) upToDate() bool {
	return f.wantSet == f.haveSet && (!f.wantSet || reflect.DeepEqual(f.want, f.have))
}

func ptr[T any](v T) *T { return &v }

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr(*p)
}

// ErrForeignService is returned when a Service of the wanted name exists
// but svcbridge (this controller instance) does not own it. svcbridge never
// adopts, changes or deletes such a Service.
type ErrForeignService struct {
	Namespace, Name string
	ControllerName  string            // the instance svcbridge runs as
	Labels          map[string]string // the foreign Service's ownership labels, as found
}

func (e *ErrForeignService) Error() string {
	msg := fmt.Sprintf("a Kubernetes Service named %s already exists in namespace %s and is not managed by svcbridge (labels %s=%s, %s=%s)",
		e.Name, e.Namespace, LabelManagedBy, ManagedByValue, LabelInstance, e.ControllerName)
	if e.Labels[LabelManagedBy] == ManagedByValue {
		msg += fmt.Sprintf(": it belongs to controller instance %q", e.Labels[LabelInstance])
	}
	return msg + "; delete or rename it"
}

// NoIngressError is returned by PollLoadBalancer when a LoadBalancer Service
// still has no ingress after every check.
type NoIngressError struct {
	Namespace, Name string
	Checks          int
	LastErr         error // the last GET error, when the last checks failed
}

func (e *NoIngressError) Error() string {
	msg := fmt.Sprintf("load balancer for service %s has no ingress yet after %d checks", e.Name, e.Checks)
	if e.LastErr != nil {
		msg += fmt.Sprintf(" (last check: %v)", e.LastErr)
	}
	return msg
}

func (e *NoIngressError) Unwrap() error { return e.LastErr }

// writeBackoff paces retries of a write that lost a race (409, a failed
// resourceVersion test): many concurrent writers of one object must all
// get through, so it allows more steps than retry.DefaultRetry's 5.
var writeBackoff = wait.Backoff{Steps: 25, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 1, Cap: time.Second}

// errRetry marks an error the write loops retry: the object changed under us.
type errRetry struct{ err error }

func (e errRetry) Error() string { return e.err.Error() }
func (e errRetry) Unwrap() error { return e.err }

func isRetry(err error) bool { var r errRetry; return errors.As(err, &r) }

// retryWrite runs fn until it succeeds or fails with an error other than
// errRetry, within writeBackoff and ctx. The last error is unwrapped.
func retryWrite(ctx context.Context, fn func() error) error {
	err := retry.OnError(writeBackoff, isRetry, func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn()
	})
	var r errRetry
	if errors.As(err, &r) {
		return r.err
	}
	return err
}

// patchOp is one RFC 6902 operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// servicePatch is the JSON patch that brings live to desired: a test of
// live's resourceVersion (so a concurrent change fails the patch instead of
// being overwritten), then /spec/type, /spec/selector, /spec/ports,
// /metadata/annotations, /metadata/labels and each option field. A write
// is an "add", which RFC 6902 defines to replace a member that exists and
// create one that does not: a Service created without tags has no
// /metadata/annotations, and "replace" of a missing member is an error by
// the RFC. An option desired no longer has is a "remove", only when live
// has it ("remove" of a missing member fails on kube-apiserver). The
// annotation and label maps are replaced whole, as seed 000 says:
// annotations svcbridge did not generate are removed.
func servicePatch(live, desired *corev1.Service) ([]byte, error) {
	d := withServerDefaults(desired)
	annotations := d.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	selector := d.Spec.Selector
	if selector == nil {
		selector = map[string]string{}
	}
	ops := []patchOp{
		{Op: "test", Path: "/metadata/resourceVersion", Value: live.ResourceVersion},
		{Op: "add", Path: "/spec/type", Value: d.Spec.Type},
		{Op: "add", Path: "/spec/selector", Value: selector},
		{Op: "add", Path: "/spec/ports", Value: d.Spec.Ports},
		{Op: "add", Path: "/metadata/annotations", Value: annotations},
		{Op: "add", Path: "/metadata/labels", Value: d.Labels},
	}
	for _, f := range optionFields(live, d) {
		switch {
		case f.wantSet:
			ops = append(ops, patchOp{Op: "add", Path: f.path, Value: f.want})
		case f.haveSet:
			ops = append(ops, patchOp{Op: "remove", Path: f.path})
		}
	}
	return json.Marshal(ops)
}

// UpToDate reports whether live already has what EnsureService would patch.
// Fields the server fills in (nodePort, clusterIP, …) are not compared;
// the options are compared with Kubernetes' defaults filled in.
func UpToDate(live, desired *corev1.Service) bool {
	d := withServerDefaults(desired)
	if live.Spec.Type != d.Spec.Type || !maps.Equal(live.Spec.Selector, d.Spec.Selector) ||
		!maps.Equal(live.Annotations, d.Annotations) || !maps.Equal(live.Labels, d.Labels) ||
		len(live.Spec.Ports) != len(d.Spec.Ports) {
		return false
	}
	for _, f := range optionFields(live, d) {
		if !f.upToDate() {
			return false
		}
	}
	for i, want := range d.Spec.Ports {
		l := live.Spec.Ports[i]
		if l.Name != want.Name || l.Port != want.Port || l.TargetPort != want.TargetPort || l.Protocol != want.Protocol ||
			!equalPtr(l.AppProtocol, want.AppProtocol) || (want.NodePort != 0 && l.NodePort != want.NodePort) {
			return false
		}
	}
	return true
}

func equalPtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// failedTest reports whether a PATCH failed because a JSON patch operation
// did not apply. The API server answers that with a bare 422 (reason
// Invalid, the generic message "the server rejected our request due to an
// error in our request", no causes), unlike a validation error, which
// lists its field causes. In servicePatch only the resourceVersion "test"
// can fail that way: every other operation is an "add" under /spec or
// /metadata, which always exist, or a "remove" of a member live had, which
// the passing test guarantees is still there.
func failedTest(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	return s.Code == http.StatusUnprocessableEntity && (s.Details == nil || len(s.Details.Causes) == 0)
}

// beforePatch, when set (tests only), runs between reading a live Service
// and patching it.
var beforePatch func(live *corev1.Service)

// EnsureService makes the Kubernetes Service desired (from BuildService)
// exist in cfg.Namespace: it creates it, or, when one of that name exists
// and is ours, JSON-patches its type, selector, ports and annotations
// (guarded by its resourceVersion and retried when someone else changed it
// in between). A Service of that name that is not ours is left untouched
// and *ErrForeignService is returned.
func EnsureService(ctx context.Context, cs kubernetes.Interface, cfg Config, desired *corev1.Service) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.WithDefaults()
	want := desired.DeepCopy()
	want.Namespace = cfg.Namespace
	want.ResourceVersion = ""
	services := cs.CoreV1().Services(cfg.Namespace)
	name := want.Name

	create := func() error {
		_, err := services.Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create Kubernetes Service %s/%s: %w", cfg.Namespace, name, err)
		}
		return nil
	}
	err := create()
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}
	return retryWrite(ctx, func() error {
		live, err := services.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) { // deleted since: create it again
			if err := create(); apierrors.IsAlreadyExists(err) {
				return errRetry{err}
			} else {
				return err
			}
		}
		if err != nil {
			return fmt.Errorf("get Kubernetes Service %s/%s: %w", cfg.Namespace, name, err)
		}
		if !cfg.Owns(live.Labels) {
			return &ErrForeignService{Namespace: cfg.Namespace, Name: name, ControllerName: cfg.ControllerName,
				Labels: map[string]string{LabelManagedBy: live.Labels[LabelManagedBy], LabelInstance: live.Labels[LabelInstance]}}
		}
		if UpToDate(live, want) {
			return nil
		}
		patch, err := servicePatch(live, want)
		if err != nil {
			return err
		}
		if beforePatch != nil {
			beforePatch(live)
		}
		_, err = services.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			return nil
		case apierrors.IsConflict(err), apierrors.IsNotFound(err), failedTest(err):
			return errRetry{fmt.Errorf("patch Kubernetes Service %s/%s: it kept changing: %w", cfg.Namespace, name, err)}
		default:
			return fmt.Errorf("patch Kubernetes Service %s/%s: %w", cfg.Namespace, name, err)
		}
	})
}

// DeleteService deletes the Kubernetes Service name when it is ours. A
// missing Service is success; one that is not ours is left alone (and is
// success too: svcbridge has nothing of its own to remove).
func DeleteService(ctx context.Context, cs kubernetes.Interface, cfg Config, name string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.WithDefaults()
	services := cs.CoreV1().Services(cfg.Namespace)
	return retryWrite(ctx, func() error {
		live, err := services.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get Kubernetes Service %s/%s: %w", cfg.Namespace, name, err)
		}
		if !cfg.Owns(live.Labels) {
			return nil
		}
		// The preconditions make sure the Service deleted is the one
		// just found to be ours, not a foreign one created since.
		err = services.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
			UID: &live.UID, ResourceVersion: &live.ResourceVersion}})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err):
			return errRetry{fmt.Errorf("delete Kubernetes Service %s/%s: it kept changing: %w", cfg.Namespace, name, err)}
		default:
			return fmt.Errorf("delete Kubernetes Service %s/%s: %w", cfg.Namespace, name, err)
		}
	})
}

// PollLoadBalancer returns where clients reach a LoadBalancer Service: the
// first ingress entry's IP, else its hostname. It GETs the Service up to
// cfg.LBPollAttempts times, cfg.LBPollInterval apart (no wait after the
// last), and returns *NoIngressError when no check found an ingress. For a
// ClusterIP or NodePort Service it returns "", nil at once. A missing
// Service is an error at once.
func PollLoadBalancer(ctx context.Context, cs kubernetes.Interface, cfg Config, name string) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	cfg = cfg.WithDefaults()
	services := cs.CoreV1().Services(cfg.Namespace)
	var lastErr error
	for attempt := 1; ; attempt++ {
		svc, err := services.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return "", fmt.Errorf("load balancer for service %s: %w", name, err)
		case err != nil:
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			lastErr = err // transient: check again
		case svc.Spec.Type != corev1.ServiceTypeLoadBalancer:
			return "", nil
		default:
			lastErr = nil
			if endpoint := IngressEndpoint(svc); endpoint != "" {
				return endpoint, nil
			}
		}
		if attempt >= cfg.LBPollAttempts {
			return "", &NoIngressError{Namespace: cfg.Namespace, Name: name, Checks: attempt, LastErr: lastErr}
		}
		timer := time.NewTimer(cfg.LBPollInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return "", ctx.Err()
		case <-timer.C:
		}
	}
}

// IngressEndpoint is the first load balancer ingress entry's IP, else its
// hostname, else "".
func IngressEndpoint(svc *corev1.Service) string {
	ingress := svc.Status.LoadBalancer.Ingress
	if len(ingress) == 0 {
		return ""
	}
	if ingress[0].IP != "" {
		return ingress[0].IP
	}
	return ingress[0].Hostname
}
