package kube

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Client rate limits. client-go's defaults (5 qps, burst 10) would throttle
// a fan-out of Service reconciles; these stay polite to the API server.
const (
	ClientQPS   = 50
	ClientBurst = 100
)

// RESTConfig finds the cluster the usual way: kubeconfigPath when given;
// else the files named by $KUBECONFIG; else the in-cluster service account
// when running in a pod; else ~/.kube/config.
func RESTConfig(kubeconfigPath string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case kubeconfigPath != "":
		cfg, err = loadKubeconfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfigPath})
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		cfg, err = loadKubeconfig(clientcmd.NewDefaultClientConfigLoadingRules())
	default:
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			cfg, err = loadKubeconfig(clientcmd.NewDefaultClientConfigLoadingRules())
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kube: no Kubernetes client configuration (tried %s): %w", describeSources(kubeconfigPath), err)
	}
	cfg.QPS, cfg.Burst = ClientQPS, ClientBurst
	if cfg.UserAgent == "" {
		cfg.UserAgent = "svcbridge"
	}
	return cfg, nil
}

func loadKubeconfig(rules *clientcmd.ClientConfigLoadingRules) (*rest.Config, error) {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

func describeSources(kubeconfigPath string) string {
	if kubeconfigPath != "" {
		return kubeconfigPath
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		return "$KUBECONFIG=" + env
	}
	return "in-cluster service account, then " + clientcmd.RecommendedHomeFile
}

// NewClient returns a clientset for the cluster RESTConfig finds.
func NewClient(kubeconfigPath string) (kubernetes.Interface, error) {
	cfg, err := RESTConfig(kubeconfigPath)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: client: %w", err)
	}
	return cs, nil
}
