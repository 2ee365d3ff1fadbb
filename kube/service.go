package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"
)

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

// SyncService makes the Kubernetes Service name what plan decides from the
// live one (nil when there is none; plan is PlanService in production) and
// returns the change it made. A patch is guarded by the resourceVersion
// read, a delete by the uid too, and a create fails when one exists: a
// Service someone else created, changed or deleted in between is read and
// planned again. A ServiceRefuse is *ErrForeignService; an error of plan is
// returned as it is.
func SyncService(ctx context.Context, cs kubernetes.Interface, cfg Config, name string,
	plan func(live *corev1.Service) (ServiceChange, error)) (ServiceChange, error) {
	var change ServiceChange
	if err := cfg.Validate(); err != nil {
		return change, err
	}
	cfg = cfg.WithDefaults()
	services := cs.CoreV1().Services(cfg.Namespace)
	err := retryWrite(ctx, func() error {
		live, err := services.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			live, err = nil, nil
		}
		if err != nil {
			return fmt.Errorf("get Kubernetes Service %s/%s: %w", cfg.Namespace, name, err)
		}
		if change, err = plan(live); err != nil {
			return err
		}
		return applyService(ctx, services, cfg, name, change)
	})
	return change, err
}

// applyService makes the write c says; a lost race is errRetry.
func applyService(ctx context.Context, services typedcorev1.ServiceInterface, cfg Config, name string, c ServiceChange) error {
	var err error
	switch c.Action {
	case ServiceKeep:
		return nil
	case ServiceRefuse:
		return &ErrForeignService{Namespace: cfg.Namespace, Name: name, ControllerName: cfg.ControllerName,
			Labels: map[string]string{LabelManagedBy: c.Live.Labels[LabelManagedBy], LabelInstance: c.Live.Labels[LabelInstance]}}
	case ServiceCreate:
		_, err = services.Create(ctx, c.Desired, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return errRetry{fmt.Errorf("create Kubernetes Service %s/%s: it kept changing: %w", cfg.Namespace, name, err)}
		}
		if err != nil {
			return fmt.Errorf("create Kubernetes Service %s/%s: %w", cfg.Namespace, name, err)
		}
	case ServicePatch:
		var patch []byte
		if patch, err = servicePatch(c.Live, c.Desired); err != nil {
			return err
		}
		_, err = services.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
		switch {
		case apierrors.IsConflict(err), apierrors.IsNotFound(err), failedTest(err):
			return errRetry{fmt.Errorf("patch Kubernetes Service %s/%s: it kept changing: %w", cfg.Namespace, name, err)}
		case err != nil:
			return fmt.Errorf("patch Kubernetes Service %s/%s: %w", cfg.Namespace, name, err)
		}
	case ServiceDelete:
		// The preconditions make sure the Service deleted is the one
		// found to be ours, not a foreign one created since.
		err = services.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
			UID: &c.Live.UID, ResourceVersion: &c.Live.ResourceVersion}})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err):
			return errRetry{fmt.Errorf("delete Kubernetes Service %s/%s: it kept changing: %w", cfg.Namespace, name, err)}
		case err != nil:
			return fmt.Errorf("delete Kubernetes Service %s/%s: %w", cfg.Namespace, name, err)
		}
	}
	return nil
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
