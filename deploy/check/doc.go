// Package check validates the deployment artefacts without a cluster or a
// Docker engine: the Helm chart renders and every object it produces
// decodes strictly as Kubernetes (client-go's scheme) or KEDA (its CRD's
// schema) would take it; docker-compose.yml loads under the Compose
// specification's schema with the health checks, start order and restart
// policies the production shape needs; the NATS cluster configuration
// parses as nats-server reads it; and every VOICEAI_* variable the
// artefacts set is one a binary reads. It is its own module (run with
// GOWORK=off, see make deploy-check) so that Helm and Kubernetes stay out
// of the services' dependencies.
package check
