package check

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const chartDir = repoRoot + "/deploy/helm/voiceai"

// The value sets the chart is checked with: what an operator must give,
// and every optional part switched on.
var valueSets = map[string]string{
	"required values": `
secret: {secretKey: 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff}
mongo: {uri: "mongodb://m-0:27017,m-1:27017,m-2:27017/?replicaSet=rs0"}
`,
	"keda, mongo statefulset, existing secret, model key": `
secret: {existingSecret: voiceai-keys}
mongo: {statefulset: {enabled: true}}
llm: {provider: openai, baseURL: "https://llm.internal/v1", model: gpt-4o-mini, apiKeySecret: llm-key}
runnerAutoscaling: {keda: {enabled: true, maxReplicas: 50}}
`,
	"no autoscaler": `
secret: {secretKey: 0123456789abcdef0123456789abcdef, bootstrapAdminKey: admin}
mongo: {existingSecret: mongo-uri}
runnerAutoscaling: {keda: {enabled: false}, hpa: {enabled: false}}
components: {testing-runner: {replicas: 5}}
`,
}

// components are the commands the chart deploys: one Deployment each.
var components = []string{"gateway", "identity", "agents", "tickets", "tickets-qa-worker",
	"testing", "testing-runner", "webhooks", "webhook-dispatcher"}

func TestHelmChartLints(t *testing.T) {
	for name, set := range valueSets {
		linter := lint.All(chartDir, parseValues(t, set), "qa", false)
		for _, m := range linter.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: helm lint: %s", name, m)
			}
		}
	}
}

func TestHelmChartRendersValidObjects(t *testing.T) {
	keda := loadKEDAScaledObjectSchema(t)
	for name, set := range valueSets {
		t.Run(name, func(t *testing.T) {
			objects := renderChart(t, parseValues(t, set))
			deployments := map[string]*appsv1.Deployment{}
			pdbs := map[string]bool{}
			kinds := map[string]int{}
			for _, o := range objects {
				kinds[o.kind]++
				checkNames(t, o)
				switch o.kind {
				case "ScaledObject":
					if err := keda.validate(o.doc); err != nil {
						t.Errorf("%s: %v", o.source, err)
					}
					checkScaledObject(t, o.doc)
					continue
				}
				obj := decodeStrict(t, o)
				switch v := obj.(type) {
				case *appsv1.Deployment:
					deployments[v.Labels["app.kubernetes.io/name"]] = v
				case *policyv1.PodDisruptionBudget:
					pdbs[v.Spec.Selector.MatchLabels["app.kubernetes.io/name"]] = true
				case *autoscalingv2.HorizontalPodAutoscaler:
					if !strings.HasSuffix(v.Spec.ScaleTargetRef.Name, "-testing-runner") {
						t.Errorf("the HPA scales %s, want the runners", v.Spec.ScaleTargetRef.Name)
					}
				}
			}
			t.Logf("%s: %v", name, kinds)
			for _, c := range components {
				d := deployments[c]
				if d == nil {
					t.Errorf("no Deployment for %s", c)
					continue
				}
				checkDeployment(t, c, d)
				replicated := d.Spec.Replicas == nil || *d.Spec.Replicas > 1
				if replicated && !pdbs[c] {
					t.Errorf("%s runs replicas without a PodDisruptionBudget", c)
				}
			}
			if len(deployments) != len(components) {
				t.Errorf("Deployments %v, want exactly %v", keys(deployments), components)
			}
			autoscaled := kinds["ScaledObject"]+kinds["HorizontalPodAutoscaler"] > 0
			if r := deployments["testing-runner"]; r != nil && autoscaled != (r.Spec.Replicas == nil) {
				t.Errorf("runner replicas %v with an autoscaler %v: the Deployment must leave the count to the autoscaler, and only then", r.Spec.Replicas, autoscaled)
			}
		})
	}
}

// With nats.existingSecret, every Deployment reads its NATS URL, login
// included, from that Secret, and none carries it in plain sight.
func TestHelmChartTakesTheNATSLoginFromASecret(t *testing.T) {
	objects := renderChart(t, parseValues(t, valueSets["required values"]+"nats: {existingSecret: voiceai-nats}\n"))
	seen := 0
	for _, o := range objects {
		if o.kind != "Deployment" {
			continue
		}
		d := decodeStrict(t, o).(*appsv1.Deployment)
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name != "VOICEAI_NATS_URL" {
				continue
			}
			seen++
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
				e.ValueFrom.SecretKeyRef.Name != "voiceai-nats" || e.ValueFrom.SecretKeyRef.Key != "url" {
				t.Errorf("%s: VOICEAI_NATS_URL %+v, want it from the Secret voiceai-nats, key url", d.Name, e)
			}
		}
	}
	if seen != len(components) {
		t.Errorf("%d Deployments read VOICEAI_NATS_URL, want %d", seen, len(components))
	}
}

func TestHelmChartRefusesMissingSecrets(t *testing.T) {
	for _, set := range []string{`mongo: {uri: "mongodb://m"}`, `secret: {secretKey: 0123456789abcdef0123456789abcdef}`} {
		ch, err := loader.Load(chartDir)
		if err != nil {
			t.Fatal(err)
		}
		rv, err := chartutil.ToRenderValues(ch, parseValues(t, set), chartutil.ReleaseOptions{Name: "voiceai", Namespace: "qa"}, chartutil.DefaultCapabilities)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Render(ch, rv); err == nil || !strings.Contains(err.Error(), "is required") {
			t.Errorf("values %q rendered (%v); want a clear 'is required'", set, err)
		}
	}
}

func TestHelmChartRefusesUnknownValues(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{
		"secret: {secretKey: changeme}\nmongo: {uri: \"mongodb://m\"}",
		"secret: {secretKey: 0123456789abcdef0123456789abcdef}\nmongo: {uri: \"mongodb://m\"}\ncomponents: {gatway: {replicas: 3, resources: {}}}",
		"secret: {secretKey: 0123456789abcdef0123456789abcdef}\nmongo: {uri: \"mongodb://m\"}\nstreamReplicas: 2",
		"secret: {secretKey: 0123456789abcdef0123456789abcdef}\nmongo: {uri: \"mongodb://m\"}\nrunnerAutoscaling: {keda: {enable: true}}",
	} {
		_, err := chartutil.ToRenderValues(ch, parseValues(t, set), chartutil.ReleaseOptions{Name: "voiceai", Namespace: "qa"}, chartutil.DefaultCapabilities)
		if err == nil {
			t.Errorf("values %q accepted; want values.schema.json to refuse them", set)
		}
	}
}

// checkDeployment asserts what every component needs to run and be run.
func checkDeployment(t *testing.T, name string, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers", name, len(spec.Containers))
	}
	c := spec.Containers[0]
	if at := strings.LastIndex(c.Image, ":"); at < 0 || !strings.HasSuffix(c.Image[:at], "/"+name) {
		t.Errorf("%s: image %s, want <repository>/%s:<tag>", name, c.Image, name)
	}
	service, command := name, ""
	switch name {
	case "testing-runner":
		service, command = "testing", name
	case "tickets-qa-worker":
		service, command = "tickets", name
	case "webhook-dispatcher":
		service, command = "webhooks", name
	}
	if !commandExists(service, command) {
		t.Errorf("%s: no command services/%s/cmd/%s", name, service, command)
	}
	for probe, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s: no %s probe", name, probe)
			continue
		}
		want := "/readyz"
		if probe == "liveness" {
			want = "/healthz"
		}
		if p.HTTPGet.Path != want || p.HTTPGet.Port.String() != "internal" {
			t.Errorf("%s: %s probe %s on %s, want %s on the internal port", name, probe, p.HTTPGet.Path, p.HTTPGet.Port.String(), want)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %v: want CPU and memory requests and a memory limit", name, c.Resources)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if env["VOICEAI_STREAM_REPLICAS"].Value != "3" {
		t.Errorf("%s: VOICEAI_STREAM_REPLICAS %q, want 3", name, env["VOICEAI_STREAM_REPLICAS"].Value)
	}
	if env["VOICEAI_METRICS_ADDR"].Value != "0.0.0.0:9464" {
		t.Errorf("%s: VOICEAI_METRICS_ADDR %q: the probes need it on every interface, port 9464", name, env["VOICEAI_METRICS_ADDR"].Value)
	}
	if e, ok := env["GOMEMLIMIT"]; !ok || e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil {
		t.Errorf("%s: GOMEMLIMIT does not follow the memory limit", name)
	}
	var names []string
	for n := range env {
		names = append(names, n)
	}
	if unknown := unknownVariables(configuredVariables(t), names); len(unknown) > 0 {
		t.Errorf("%s: sets %v, which no binary reads", name, unknown)
	}
	if name == "gateway" {
		// Not ready, still serving, before its listener closes; all of it
		// (with the 15 s drain) within the grace period.
		delay, err := time.ParseDuration(env["VOICEAI_SHUTDOWN_DELAY"].Value)
		grace := d.Spec.Template.Spec.TerminationGracePeriodSeconds
		if err != nil || delay <= 0 || grace == nil || time.Duration(*grace)*time.Second < delay+20*time.Second {
			t.Errorf("gateway: VOICEAI_SHUTDOWN_DELAY %q, grace %v s: want a delay, and room for it and the drain", env["VOICEAI_SHUTDOWN_DELAY"].Value, grace)
		}
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: the root filesystem is writable", name)
	}
}

// checkScaledObject asserts the runner scaler reads the backlog of the
// queue the runners pull from, by the names the code uses: every
// invocation has a consumer of its own, so it reads the stream.
func checkScaledObject(t *testing.T, doc map[string]any) {
	t.Helper()
	stream := goConstant(t, "TestJobsStream", "proto-events", "testing.go")
	spec, _ := doc["spec"].(map[string]any)
	target, _ := spec["scaleTargetRef"].(map[string]any)
	if name, _ := target["name"].(string); !strings.HasSuffix(name, "-testing-runner") {
		t.Errorf("the ScaledObject scales %q, want the runners", name)
	}
	triggers, _ := spec["triggers"].([]any)
	for _, tr := range triggers {
		m, _ := tr.(map[string]any)
		md, _ := m["metadata"].(map[string]any)
		query, _ := md["query"].(string)
		if m["type"] == "prometheus" && strings.Contains(query, `voiceai_stream_messages{stream="`+stream+`"}`) && md["serverAddress"] != "" {
			return
		}
	}
	t.Errorf("no prometheus trigger on the messages of stream %s: %v", stream, triggers)
}

// rendered is one object of the chart's output.
type rendered struct {
	source, kind, name string
	raw                []byte
	doc                map[string]any
}

func renderChart(t *testing.T, values map[string]any) []rendered {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "voiceai", Namespace: "qa", IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	var out []rendered
	for source, content := range files {
		if strings.HasSuffix(source, "NOTES.txt") {
			continue
		}
		for _, manifest := range releaseutil.SplitManifests(content) {
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(manifest), &doc); err != nil {
				t.Fatalf("%s: %v\n%s", source, err, manifest)
			}
			if len(doc) == 0 {
				continue
			}
			kind, _ := doc["kind"].(string)
			meta, _ := doc["metadata"].(map[string]any)
			name, _ := meta["name"].(string)
			out = append(out, rendered{source: source, kind: kind, name: name, raw: []byte(manifest), doc: doc})
		}
	}
	if len(out) == 0 {
		t.Fatal("the chart rendered nothing")
	}
	return out
}

// decodeStrict decodes o as the API server would with strict field
// validation: an unknown or duplicate field, or a wrong type, fails.
func decodeStrict(t *testing.T, o rendered) runtime.Object {
	t.Helper()
	codecs := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict)
	obj, _, err := codecs.UniversalDeserializer().Decode(o.raw, nil, nil)
	if err != nil {
		t.Fatalf("%s (%s %s): %v", o.source, o.kind, o.name, err)
	}
	return obj
}

// checkNames applies the API server's rules for names and labels.
func checkNames(t *testing.T, o rendered) {
	t.Helper()
	for _, msg := range validation.IsDNS1123Subdomain(o.name) {
		t.Errorf("%s %q: %s", o.kind, o.name, msg)
	}
	meta, _ := o.doc["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	for k, v := range labels {
		s := fmt.Sprint(v)
		for _, msg := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(s)...) {
			t.Errorf("%s %q label %s=%s: %s", o.kind, o.name, k, s, msg)
		}
	}
}

func parseValues(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
