package devserver

import (
	"net"
	"strconv"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/primitives"
)

// serverConfig is the static config of a single-node, single-shard cluster
// with every service bound to ip.
func serverConfig(ip, frontend string, ports map[primitives.ServiceName]int, httpPort int, store, visibility *config.SQL) *config.Config {
	conf := &config.Config{}
	conf.Global.Membership = config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: ip}
	// Global.Metrics stays nil: no metrics listener at all, one port fewer.
	conf.Persistence = config.Persistence{
		DefaultStore:     storeName,
		VisibilityStore:  visibilityStoreName,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{storeName: {SQL: store}, visibilityStoreName: {SQL: visibility}},
	}
	conf.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontend,
				HTTPAddress:            net.JoinHostPort(ip, strconv.Itoa(httpPort)),
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{}
	for svc, port := range ports {
		var c config.Service
		c.RPC.GRPCPort = port
		c.RPC.BindOnIP = ip
		if svc == primitives.FrontendService {
			c.RPC.HTTPPort = httpPort
		}
		conf.Services[string(svc)] = c
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The worker service's system workflows reach the frontend through this.
	conf.PublicClient.HostPort = frontend
	return conf
}

func staticHosts(ip string, ports map[primitives.ServiceName]int) map[primitives.ServiceName]static.Hosts {
	hosts := make(map[primitives.ServiceName]static.Hosts, len(ports))
	for svc, port := range ports {
		hosts[svc] = static.SingleLocalHost(net.JoinHostPort(ip, strconv.Itoa(port)))
	}
	return hosts
}

// dynamicConfig holds the settings a single-node dev server wants; most
// follow the Temporal CLI's dev server.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// One partition per task queue: partitions only spread load across
		// matching nodes, and there is one node; fewer partitions means less
		// polling and faster task dispatch.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// Search attributes and namespaces are read from caches, not from
		// the store at every use as the Temporal CLI's dev server does
		// (system.forceSearchAttributesCacheRefreshOnRead): that bypass cost
		// a twelfth of a fill's CPU time and queued its reads with the
		// history writes on the store's one connection. The namespace holds
		// its attributes before the server starts (prepareSQLite), so the
		// caches' first read has them.
		dynamicconfig.NamespaceCacheRefreshInterval.Key(): namespaceRefresh,
		// Raise the persistence rate limits as the CLI does (same 2:9 ratio
		// as the defaults): a fill makes thousands of calls a second.
		dynamicconfig.FrontendPersistenceMaxQPS.Key(): 10000,
		dynamicconfig.HistoryPersistenceMaxQPS.Key():  45000,
		// The Web UI lists and counts workflows often; 10 RPS is too low.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// A dev box does not need a 128k-entry mutable state cache; every
		// service's workflow stays open, so the cache would grow with them.
		// A pass touches its workflow for tens of milliseconds: a few
		// hundred entries cover 50 clients' creates.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 256,
		// The cross-cluster (XDC) events cache serves replication, which a
		// single dev server never does.
		dynamicconfig.XDCCacheMaxSizeBytes.Key(): 256 << 10,
		// The history service's task schedulers start 512 workers each, and
		// replication's 640 more on a server that never replicates: about
		// 2,200 idle goroutines that every GC scans, for one shard whose
		// store writes one at a time anyway.
		dynamicconfig.TimerProcessorSchedulerWorkerCount.Key():                  32,
		dynamicconfig.TransferProcessorSchedulerWorkerCount.Key():               32,
		dynamicconfig.VisibilityProcessorSchedulerWorkerCount.Key():             32,
		dynamicconfig.ReplicationProcessorSchedulerWorkerCount.Key():            1,
		dynamicconfig.ReplicationLowPriorityProcessorSchedulerWorkerCount.Key(): 1,
		// Workflow Update (svcbridge may use UpdateWithStart); on by default
		// in v1.31, set explicitly so a default change cannot surprise us.
		dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key():              true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecutionAsyncAccepted.Key(): true,
	}
}
