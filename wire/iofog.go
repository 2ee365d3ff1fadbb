package wire

// The ioFog controller's read shapes (Datasance Controller v3.7.3, the
// routes potctl and the ioFog Go SDK read), with its field names. Fields
// svcbridge does not hold carry the value the reference gives an unset one
// (its model's default, or null where it has none).

// FogList is the answer of GET /api/v3/iofog-list.
type FogList struct {
	Fogs []Fog `json:"fogs"`
}

// Fog is an agent in the reference controller's shape (GET
// /api/v3/iofog/{uuid}, an item of FogList); the SDK reads it as
// AgentInfo. Location and Description, which svcbridge does not hold,
// are "" as the reference answers them, not null.
type Fog struct {
	UUID        string   `json:"uuid"`
	Name        string   `json:"name"`
	Host        string   `json:"host"`
	Location    string   `json:"location"`
	Latitude    *float64 `json:"latitude"`
	Longitude   *float64 `json:"longitude"`
	Description string   `json:"description"`
	// IsSystem marks the agent of the default router, as the reference's
	// system agent holds it.
	IsSystem bool `json:"isSystem"`
	// RouterMode is edge, interior or none.
	RouterMode string `json:"routerMode"`
	// UpstreamRouters names the routers this agent's router connects to:
	// "default-router" for the default router, else the agent's uuid;
	// absent when it has no router.
	UpstreamRouters []string `json:"upstreamRouters,omitempty"`
	Tags            []string `json:"tags"`
	CreatedAt       string   `json:"createdAt"` // RFC 3339
	UpdatedAt       string   `json:"updatedAt"`

	DaemonStatus              string     `json:"daemonStatus"`
	DaemonOperatingDuration   int64      `json:"daemonOperatingDuration"`
	DaemonLastStart           int64      `json:"daemonLastStart"`
	LastActive                int64      `json:"lastActive"`
	LastStatusTime            int64      `json:"lastStatusTime"`
	LastCommandTime           int64      `json:"lastCommandTime"`
	MemoryUsage               float64    `json:"memoryUsage"`
	DiskUsage                 float64    `json:"diskUsage"`
	CPUUsage                  float64    `json:"cpuUsage"`
	SystemAvailableMemory     *int64     `json:"systemAvailableMemory"`
	SystemAvailableDisk       *int64     `json:"systemAvailableDisk"`
	MemoryViolation           *string    `json:"memoryViolation"`
	DiskViolation             *string    `json:"diskViolation"`
	CPUViolation              *string    `json:"cpuViolation"`
	RepositoryCount           int64      `json:"repositoryCount"`
	RepositoryStatus          *string    `json:"repositoryStatus"`
	IPAddress                 string     `json:"ipAddress"`
	IPAddressExternal         string     `json:"ipAddressExternal"`
	ProcessedMessages         int64      `json:"processedMessages"`
	MessageSpeed              float64    `json:"messageSpeed"`
	NetworkInterface          string     `json:"networkInterface"`
	DockerURL                 string     `json:"dockerUrl"`
	ContainerEngine           string     `json:"containerEngine"`
	DeploymentType            string     `json:"deploymentType"`
	DiskLimit                 float64    `json:"diskLimit"`
	DiskDirectory             string     `json:"diskDirectory"`
	MemoryLimit               float64    `json:"memoryLimit"`
	CPULimit                  float64    `json:"cpuLimit"`
	LogLimit                  float64    `json:"logLimit"`
	LogDirectory              string     `json:"logDirectory"`
	LogFileCount              int64      `json:"logFileCount"`
	LogLevel                  string     `json:"logLevel"`
	StatusFrequency           int        `json:"statusFrequency"`
	ChangeFrequency           int        `json:"changeFrequency"`
	DeviceScanFrequency       int        `json:"deviceScanFrequency"`
	BluetoothEnabled          bool       `json:"bluetoothEnabled"`
	WatchdogEnabled           bool       `json:"watchdogEnabled"`
	AbstractedHardwareEnabled bool       `json:"abstractedHardwareEnabled"`
	GpsMode                   *string    `json:"gpsMode"`
	GpsDevice                 *string    `json:"gpsDevice"`
	GpsScanFrequency          int        `json:"gpsScanFrequency"`
	EdgeGuardFrequency        int        `json:"edgeGuardFrequency"`
	DockerPruningFrequency    int        `json:"dockerPruningFrequency"`
	AvailableDiskThreshold    float64    `json:"availableDiskThreshold"`
	Version                   *string    `json:"version"`
	IsReadyToUpgrade          bool       `json:"isReadyToUpgrade"`
	IsReadyToRollback         bool       `json:"isReadyToRollback"`
	Tunnel                    string     `json:"tunnel"`
	TimeZone                  *string    `json:"timeZone"`
	SecurityStatus            string     `json:"securityStatus"`
	SecurityViolationInfo     string     `json:"securityViolationInfo"`
	WarningMessage            string     `json:"warningMessage"`
	ActiveVolumeMounts        int64      `json:"activeVolumeMounts"`
	VolumeMounts              []struct{} `json:"volumeMounts"`
}

// MicroserviceList is the answer of GET /api/v3/microservices, the
// reference controller's shape.
type MicroserviceList struct {
	Microservices []Microservice `json:"microservices"`
}

// IofogMicroservice is the part of a Microservice answer in the reference
// controller's shape that svcbridge's own fields do not already say (the
// SDK reads the whole as MicroserviceInfo). AgentUUID repeats Agent under
// the reference's name; ApplicationID and FlowID, the reference's numeric
// application ids, are null: svcbridge names applications only.
type IofogMicroservice struct {
	AgentUUID         string   `json:"iofogUuid"`
	ApplicationID     *int     `json:"applicationId"`
	FlowID            *int     `json:"flowId"`
	Config            string   `json:"config"`
	Annotations       string   `json:"annotations"`
	IsPrivileged      bool     `json:"isPrivileged"`
	IsActivated       bool     `json:"isActivated"`
	Rebuild           bool     `json:"rebuild"`
	Delete            bool     `json:"delete"`
	DeleteWithCleanup bool     `json:"deleteWithCleanup"`
	ExecEnabled       bool     `json:"execEnabled"`
	Schedule          int      `json:"schedule"`
	LogSize           int64    `json:"logSize"`
	RunAsUser         string   `json:"runAsUser"`
	Platform          string   `json:"platform"`
	Runtime           string   `json:"runtime"`
	PidMode           string   `json:"pidMode"`
	IpcMode           string   `json:"ipcMode"`
	CPUSetCpus        string   `json:"cpuSetCpus"`
	MemoryLimit       *float64 `json:"memoryLimit"`
	ImageSnapshot     string   `json:"imageSnapshot"`
	CatalogItemID     *int     `json:"catalogItemId"`
	RegistryID        *int     `json:"registryId"`
	// The lists of what svcbridge does not hold, empty as the reference
	// answers a microservice without them.
	Ports          []struct{} `json:"ports"`
	VolumeMappings []struct{} `json:"volumeMappings"`
	Routes         []string   `json:"routes"`
	Env            []struct{} `json:"env"`
	Cmd            []string   `json:"cmd"`
	CdiDevices     []string   `json:"cdiDevices"`
	CapAdd         []string   `json:"capAdd"`
	CapDrop        []string   `json:"capDrop"`
	ExtraHosts     []struct{} `json:"extraHosts"`
	Images         []struct{} `json:"images"`
	PubTags        []string   `json:"pubTags"`
	SubTags        []string   `json:"subTags"`
}

// ApplicationList is the answer of GET /api/v3/application and GET
// /api/v3/application/system, the reference controller's shape (the SDK
// reads it as ApplicationListResponse).
type ApplicationList struct {
	Applications []Application `json:"applications"`
}

// Application is an application in the reference controller's shape (the
// SDK's ApplicationInfo). svcbridge knows an application only as the
// application of its microservices, so it is active, not a system
// application, and has no description and no routes; ID is a number
// derived from the name (the reference's is its row id), the same in every
// answer, which clients use to group microservices.
type Application struct {
	ID            int            `json:"id"`
	Name          string         `json:"name"`
	Description   string         `json:"description"`
	IsActivated   bool           `json:"isActivated"`
	IsSystem      bool           `json:"isSystem"`
	Microservices []Microservice `json:"microservices"`
	Routes        []struct{}     `json:"routes"`
}

// RouteList is the answer of GET /api/v3/routes (the SDK's
// RouteListResponse): svcbridge holds no routes.
type RouteList struct {
	Routes []struct{} `json:"routes"`
}

// VolumeMountList is the answer of GET /api/v3/volumeMounts (the SDK's
// VolumeMountListResponse): svcbridge holds no volume mounts.
type VolumeMountList struct {
	VolumeMounts []struct{} `json:"volumeMounts"`
}

// MicroserviceCreated is the answer of POST /api/v3/microservices/yaml,
// the reference's (the SDK's MicroserviceCreateResponse): the new
// microservice's uuid, which the SDK then reads.
type MicroserviceCreated struct {
	UUID string `json:"uuid"`
}
