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

const module = "github.com/voiceai-platform/voiceai/services/"

// stillLinked are the app packages not yet moved behind ports, with what
// still links them. The test fails when one of them no longer does, so
// the list only shrinks.
var stillLinked = map[string]string{}

// Every services/*/app package is a pure use-case layer: no NATS, no
// MongoDB among its dependencies, direct or not.
func TestAppsLinkNoInfrastructure(t *testing.T) {
	for _, svc := range []string{"agents", "identity", "testing", "tickets", "webhooks"} {
		pkg := svc + "/app"
		t.Run(svc, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", module+pkg).CombinedOutput()
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
			why, known := stillLinked[pkg]
			switch {
			case known && len(linked) == 0:
				t.Errorf("%s links no infrastructure any more: take it off stillLinked", pkg)
			case known:
				t.Logf("%s still links %d infrastructure packages (%s)", pkg, len(linked), why)
			case len(linked) > 0:
				t.Errorf("%s links infrastructure; declare a port in app and implement it in adapters:\n  %s", pkg, strings.Join(linked, "\n  "))
			}
		})
	}
}
