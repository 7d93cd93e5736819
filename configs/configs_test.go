// Package configs holds deployment files; this test keeps them loadable and
// their promises (probes, limits, graceful stop) true. Prometheus files are
// checked by promtool in `make test`.
package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestKubernetesManifests(t *testing.T) {
	files, _ := filepath.Glob("kubernetes/*.yaml")
	if len(files) < 4 {
		t.Fatalf("expected the Kubernetes manifests, found %v", files)
	}
	kinds := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		kinds[doc["kind"].(string)] = doc
	}
	for _, k := range []string{"Deployment", "Service", "HorizontalPodAutoscaler", "ConfigMap"} {
		if kinds[k] == nil {
			t.Fatalf("no %s manifest", k)
		}
	}
	spec := kinds["Deployment"]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	for _, probe := range []string{"readinessProbe", "livenessProbe"} {
		if c[probe] == nil {
			t.Errorf("container lacks %s", probe)
		}
	}
	limits := c["resources"].(map[string]any)["limits"].(map[string]any)
	if limits["memory"] == nil || limits["cpu"] == nil {
		t.Error("container lacks resource limits")
	}
	// The ConfigMap's drain and grace: the pod must be allowed both, and
	// the drain must outlast the readiness probe's failures, so every
	// balancer has seen /readyz fail before the listener closes.
	var stop struct {
		Drain string `yaml:"shutdown_drain"`
		Grace string `yaml:"shutdown_grace"`
	}
	if err := yaml.Unmarshal([]byte(kinds["ConfigMap"]["data"].(map[string]any)["agent-gateway.yaml"].(string)), &stop); err != nil {
		t.Fatal(err)
	}
	drain, errD := time.ParseDuration(stop.Drain)
	grace, errG := time.ParseDuration(stop.Grace)
	if errD != nil || errG != nil || drain <= 0 {
		t.Fatalf("the ConfigMap's shutdown_drain %q and shutdown_grace %q", stop.Drain, stop.Grace)
	}
	if tgps := time.Duration(spec["terminationGracePeriodSeconds"].(int)) * time.Second; tgps <= drain+grace {
		t.Errorf("terminationGracePeriodSeconds (%s) must exceed shutdown_drain + shutdown_grace (%s) so calls drain", tgps, drain+grace)
	}
	ready := c["readinessProbe"].(map[string]any)
	if seen := time.Duration(ready["periodSeconds"].(int)*ready["failureThreshold"].(int)) * time.Second; drain < seen {
		t.Errorf("shutdown_drain (%s) is shorter than the readiness probe needs to fail (%s)", drain, seen)
	}
	// The App key file must be the pod user's own, mode 0600 (the gateway
	// refuses anything else): it is an in-memory volume an init container
	// fills from the Secret, never the Secret volume itself, whose files
	// are root's and, with fsGroup, group readable.
	volumes := map[string]map[string]any{}
	for _, v := range spec["volumes"].([]any) {
		v := v.(map[string]any)
		volumes[v["name"].(string)] = v
	}
	keyVolume := ""
	for _, m := range c["volumeMounts"].([]any) {
		if m := m.(map[string]any); m["mountPath"] == "/etc/agent-gateway/github" {
			keyVolume = m["name"].(string)
		}
	}
	if v := volumes[keyVolume]; v == nil || v["emptyDir"] == nil || v["secret"] != nil {
		t.Errorf("the App key volume %q is not an emptyDir: %v", keyVolume, v)
	}
	filled := false
	inits, _ := spec["initContainers"].([]any)
	for _, ic := range inits {
		ic := ic.(map[string]any)
		cmd := strings.Join(anyStrings(ic["command"]), " ")
		mounts, _ := ic["volumeMounts"].([]any)
		for _, m := range mounts {
			if m.(map[string]any)["name"] == keyVolume && strings.Contains(cmd, "-m 0600") {
				filled = true
			}
		}
	}
	if !filled {
		t.Error("no init container copies the App key into its volume with mode 0600")
	}
	// The embedded gateway configuration must be valid YAML naming only
	// known sections (the gateway's own loader checks keys in server tests).
	cm := kinds["ConfigMap"]["data"].(map[string]any)["agent-gateway.yaml"].(string)
	var gw map[string]any
	if err := yaml.Unmarshal([]byte(cm), &gw); err != nil {
		t.Fatalf("ConfigMap gateway configuration: %v", err)
	}
	if strings.Contains(cm, "password") || strings.Contains(cm, "token:") {
		t.Error("the ConfigMap must not carry secrets")
	}
}

func TestSystemdUnitSandboxed(t *testing.T) {
	data, err := os.ReadFile("systemd/agent-gateway.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NoNewPrivileges=yes", "ProtectSystem=strict", "DynamicUser=yes", "KillSignal=SIGTERM", "ExecReload=/bin/kill -HUP $MAINPID"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("unit lacks %s", want)
		}
	}
}

func anyStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, s := range list {
		out = append(out, s.(string))
	}
	return out
}
