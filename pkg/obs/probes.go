package obs

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// ProbeHandlers answer /healthz and /readyz.
type ProbeHandlers interface {
	LiveHandler() http.Handler
	ReadyHandler() http.Handler
}

// Later are the probes of a process that serves them before its checks
// exist: while it starts they answer what NewLater was given, then what
// Set hands them.
type Later struct{ probes atomic.Pointer[Probes] }

// NewLater returns probes answering starting until Set is called.
func NewLater(starting Probes) *Later {
	l := &Later{}
	l.Set(starting)
	return l
}

// Set makes p the probes answered from now on.
func (l *Later) Set(p Probes) { l.probes.Store(&p) }

// LiveHandler answers /healthz with the current probes.
func (l *Later) LiveHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.probes.Load().LiveHandler().ServeHTTP(w, r) })
}

// ReadyHandler answers /readyz with the current probes.
func (l *Later) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.probes.Load().ReadyHandler().ServeHTTP(w, r) })
}

// NotYet is a check that fails with why: what a process starting
// answers for what it does not have yet.
func NotYet(why string) Check {
	err := errors.New(why)
	return func(context.Context) error { return err }
}

// Check is one named health check: nil means healthy.
type Check func(context.Context) error

// Probes are a process's health checks. Live fails only when the process
// cannot recover by itself (an orchestrator should restart it); Ready
// fails while it cannot serve (a dependency is down), and heals with it.
type Probes struct {
	Live  map[string]Check
	Ready map[string]Check
}

// LiveHandler answers /healthz: 200 {"status":"ok"}, or 503 with the
// failing checks.
func (p Probes) LiveHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, checks := run(r.Context(), p.Live)
		if ok {
			writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
			return
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "failing", "checks": checks})
	})
}

// ReadyHandler answers /readyz: {"ready":bool,"checks":{name:"ok"|why}},
// 200 or 503.
func (p Probes) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, checks := run(r.Context(), p.Ready)
		code := http.StatusOK
		if !ok {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, map[string]any{"ready": ok, "checks": checks})
	})
}

func run(ctx context.Context, checks map[string]Check) (bool, map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ok, out := true, make(map[string]string, len(checks))
	for name, check := range checks {
		if err := check(ctx); err != nil {
			ok, out[name] = false, err.Error()
		} else {
			out[name] = "ok"
		}
	}
	return ok, out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
