// Package architecture holds the tests of the tree's shape: rules about
// which package may link what, checked on the real import graph.
package architecture

import (
	"os/exec"
	"strings"
	"testing"
)

// infrastructure is what a use-case layer must not link: it declares the
// ports it needs and adapters bring NATS and MongoDB.
var infrastructure = []string{"github.com/nats-io/", "go.mongodb.org/"}

const services = "github.com/voiceai-platform/voiceai/services/"

// Every services/*/app package is a pure use-case layer: no NATS, no
// MongoDB among its dependencies, direct or not.
func TestAppsLinkNoInfrastructure(t *testing.T) {
	apps := appPackages(t)
	if len(apps) < 5 {
		t.Fatalf("found %d app packages under %s, want every service's: %v", len(apps), services, apps)
	}
	for _, pkg := range apps {
		t.Run(strings.TrimPrefix(pkg, services), func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
			}
			var linked []string
			for dep := range strings.Lines(string(out)) {
				for _, prefix := range infrastructure {
					if strings.HasPrefix(dep, prefix) {
						linked = append(linked, strings.TrimSpace(dep))
					}
				}
			}
			if len(linked) > 0 {
				t.Errorf("%s links infrastructure; declare a port in app and implement it in adapters:\n  %s", pkg, strings.Join(linked, "\n  "))
			}
		})
	}
}

// appPackages are the services' use-case packages (services/<name>/app),
// a service added later included.
func appPackages(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", services+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s...: %v\n%s", services, err, out)
	}
	var apps []string
	for line := range strings.Lines(string(out)) {
		pkg := strings.TrimSpace(line)
		if name, ok := strings.CutSuffix(strings.TrimPrefix(pkg, services), "/app"); ok && !strings.Contains(name, "/") {
			apps = append(apps, pkg)
		}
	}
	return apps
}
