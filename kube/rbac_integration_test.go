package kube

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"svcbridge/kube/kubetest"
	"svcbridge/routerconfig"
)

// The ServiceAccount and Role in deploy/kubernetes/rbac.yaml are enough for
// everything this package does, and no more than that on ConfigMaps.
func TestRBACManifestSuffices(t *testing.T) {
	admin := needKube(t)
	cfg := newNamespace(t, admin)
	ctx := testCtx(t)

	raw, err := os.ReadFile("../deploy/kubernetes/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var saName string
	for _, doc := range strings.Split(string(raw), "\n---") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("rbac.yaml: %v", err)
		}
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			o.Namespace, saName = cfg.Namespace, o.Name
			_, err = admin.CoreV1().ServiceAccounts(cfg.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			o.Namespace = cfg.Namespace
			_, err = admin.RbacV1().Roles(cfg.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			o.Namespace = cfg.Namespace
			for i := range o.Subjects {
				o.Subjects[i].Namespace = cfg.Namespace
			}
			_, err = admin.RbacV1().RoleBindings(cfg.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("rbac.yaml: unexpected %T", obj)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if saName == "" {
		t.Fatal("rbac.yaml has no ServiceAccount")
	}

	// Act as that ServiceAccount.
	user := "system:serviceaccount:" + cfg.Namespace + ":" + saName
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + cfg.Namespace, "system:authenticated"}
	waitForBinding(t, admin, cfg.Namespace, user, groups)
	rc := kubetest.RESTConfig(t)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}

	if err := ensureService(ctx, cs, cfg, BuildService(cfg, "checkout", 80, 10024, "ClusterIP", nil, nil)); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := ensureService(ctx, cs, cfg, BuildService(cfg, "checkout", 80, 10024, "LoadBalancer", checkoutTags, nil)); err != nil {
		t.Fatalf("patch: %v", err)
	}
	if _, err := PollLoadBalancer(ctx, cs, cfg, "checkout"); !isErr[*NoIngressError](err) {
		t.Errorf("poll: %v", err)
	}
	if err := deleteService(ctx, cs, cfg, "checkout"); err != nil {
		t.Errorf("delete: %v", err)
	}
	newHub(t, admin, cfg, map[string]string{HubConfigKey: "[]"})
	if err := UpdateHub(ctx, cs, cfg, upsertEdit([]routerconfig.Listener{seedListener}, nil)); err != nil {
		t.Errorf("hub: %v", err)
	}
	// Other ConfigMaps are out of reach.
	_, err = cs.CoreV1().ConfigMaps(cfg.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("creating another ConfigMap: %v, want Forbidden", err)
	}
}

// waitForBinding waits until the apiserver's authorizer, which reads RBAC
// objects through an informer, has seen the new RoleBinding: acting before
// that is refused, and CI once was.
func waitForBinding(t *testing.T, admin kubernetes.Interface, namespace, user string, groups []string) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Resource: "services"},
	}}
	err := wait.PollUntilContextTimeout(testCtx(t), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, err
	})
	if err != nil {
		t.Fatalf("the RoleBinding never took effect: %v", err)
	}
}
