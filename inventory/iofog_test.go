package inventory

import "testing"

func TestDecodeIofogAgentJSON(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       AgentInput
		msg        string
	}{
		{"svcbridge's fields under the reference's names", `{"uuid":"u","name":"a","host":"h","routerMode":"edge","tags":["t"],"upstreamRouters":["default-router"],"isSystem":false}`,
			AgentInput{UUID: ptr("u"), Name: ptr("a"), Host: ptr("h"), RouterMode: ptr("edge"), Tags: ptr([]string{"t"}),
				UpstreamRouters: ptr([]string{"default-router"}), DefaultRouter: ptr(false)}, ""},
		{"what potctl sends for an AgentConfig is accepted and ignored",
			`{"name":"a","fogType":0,"networkInterface":"dynamic","dockerUrl":"unix:///var/run/docker.sock","containerEngine":"docker",` +
				`"deploymentType":"native","diskLimit":50,"diskDirectory":"/var/lib/iofog/","memoryLimit":4096,"cpuLimit":80,"logLimit":10,` +
				`"logDirectory":"/var/log/iofog/","logFileCount":10,"statusFrequency":10,"changeFrequency":20,"deviceScanFrequency":20,` +
				`"bluetoothEnabled":false,"watchdogEnabled":false,"gpsMode":"","gpsScanFrequency":60,"gpsDevice":"","edgeGuardFrequency":0,` +
				`"abstractedHardwareEnabled":false,"routerMode":"edge","logLevel":"INFO","dockerPruningFrequency":0,"availableDiskThreshold":20,` +
				`"location":"x","latitude":1.5,"longitude":-2,"description":"d","messagingPort":5671,"networkRouter":"r","timeZone":"UTC"}`,
			AgentInput{Name: ptr("a"), RouterMode: ptr("edge")}, ""},
		{"defaultRouter is not the reference's name", `{"defaultRouter":true}`, AgentInput{}, "Unknown field 'defaultRouter'"},
		{"unknown key", `{"color":"red"}`, AgentInput{}, "Unknown field 'color'"},
		{"an ignored field of the wrong type", `{"diskLimit":"50"}`, AgentInput{}, "Field 'diskLimit' is not of a type(s) integer"},
		{"a fraction is no integer", `{"statusFrequency":10.5}`, AgentInput{}, "Field 'statusFrequency' is not of a type(s) integer"},
		{"a number", `{"latitude":"north"}`, AgentInput{}, "Field 'latitude' is not of a type(s) number"},
		{"a boolean", `{"watchdogEnabled":1}`, AgentInput{}, "Field 'watchdogEnabled' is not of a type(s) boolean"},
		{"null is a type error", `{"location":null}`, AgentInput{}, "Field 'location' is not of a type(s) string"},
		{"isSystem", `{"isSystem":"yes"}`, AgentInput{}, "Field 'isSystem' is not of a type(s) boolean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeIofogAgentJSON([]byte(tc.body))
			wantDecoded(t, got, err, tc.want, tc.msg)
		})
	}
}

func TestDecodeMicroserviceYAML(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      MicroserviceInput
		msg       string
	}{
		{"potctl's deploy: application/name, the agent, the container", "apiVersion: datasance.com/v3\nkind: Microservice\nmetadata:\n  name: shop/cart\n  namespace: \"\"\n" +
			"spec:\n  agent:\n    name: plant-a\n    config: {}\n  images:\n    x86: shop/cart:1\n  container:\n    hostNetworkMode: true\n    ports:\n    - internal: 80\n      external: 8080\n  config:\n    level: 3\n",
			MicroserviceInput{Application: ptr("shop"), Name: ptr("cart"), Agent: ptr("plant-a"), HostNetworkMode: ptr(true)}, ""},
		{"potctl's move: spec.name and spec.application win", "kind: Microservice\nmetadata:\n  name: shop/cart\nspec:\n  uuid: u\n  name: till\n  application: store\n" +
			"  agent:\n    name: plant-b\n  schedule: 0\n  config: {}\n  container:\n    rootHostAccess: false\n    volumes: []\n",
			MicroserviceInput{Application: ptr("store"), Name: ptr("till"), Agent: ptr("plant-b")}, ""},
		{"an fq spec.name", "kind: Microservice\nmetadata:\n  name: x\nspec:\n  name: shop/cart\n",
			MicroserviceInput{Application: ptr("shop"), Name: ptr("cart")}, ""},
		{"no agent, no hostNetworkMode: nil", "kind: Microservice\nmetadata:\n  name: shop/cart\nspec: {}\n",
			MicroserviceInput{Application: ptr("shop"), Name: ptr("cart")}, ""},
		{"no application", "kind: Microservice\nmetadata:\n  name: cart\nspec: {}\n", MicroserviceInput{}, "Required field 'application' is missing"},
		{"no name", "kind: Microservice\nmetadata: {}\nspec: {}\n", MicroserviceInput{}, "Required field 'name' is missing"},
		{"three parts", "kind: Microservice\nmetadata:\n  name: a/b/c\nspec: {}\n", MicroserviceInput{}, "Invalid name a/b/c"},
		{"no spec", "kind: Microservice\nmetadata:\n  name: a/b\n", MicroserviceInput{}, "Invalid YAML format: missing spec"},
		{"another kind", "kind: Agent\nmetadata:\n  name: a/b\nspec: {}\n", MicroserviceInput{}, "Invalid kind Agent"},
		{"unknown spec key", "kind: Microservice\nmetadata:\n  name: a/b\nspec:\n  colour: red\n", MicroserviceInput{}, "Unknown field 'spec.colour' (line 5)"},
		{"unknown container key", "kind: Microservice\nmetadata:\n  name: a/b\nspec:\n  container:\n    colour: red\n", MicroserviceInput{}, "Unknown field 'spec.container.colour' (line 6)"},
		{"agent not a mapping", "kind: Microservice\nmetadata:\n  name: a/b\nspec:\n  agent: plant-a\n", MicroserviceInput{}, "Invalid YAML format: spec.agent must be a mapping"},
		{"hostNetworkMode not a boolean", "kind: Microservice\nmetadata:\n  name: a/b\nspec:\n  container:\n    hostNetworkMode: \"yes\"\n", MicroserviceInput{}, "Field 'container.hostNetworkMode' is not of a type(s) boolean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeMicroserviceYAML([]byte(tc.doc))
			wantDecoded(t, got, err, tc.want, tc.msg)
		})
	}
}
