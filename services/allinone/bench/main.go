// Command bench measures, in one run on this machine, what the gateway
// costs: a GET of an agent through the gateway against the same handler
// called in-process, against the HTTP round trip the gateway's client
// makes, the NATS round trips a forward over NATS would add (the
// all-in-one's gateway calls its services in process), and the
// per-request cost of auth plus rate limiting.
// Rounds interleave the measurements so machine noise hits them alike;
// ratios are the result.
// The tail is shown as a latency histogram with p50 to p99.9, beside what
// each request allocates and the garbage collections it caused; the
// profile switches cover the measured rounds only.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/trace"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/voiceai-platform/voiceai/pkg/embedded/docstore"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/warmup"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchkit"
	"github.com/voiceai-platform/voiceai/services/allinone/stack"
)

func main() {
	n := flag.Int("n", 3000, "requests per measurement")
	rounds := flag.Int("rounds", 5, "interleaved rounds")
	var prof profiles
	flag.StringVar(&prof.cpu, "cpuprofile", "", "write a CPU profile of the measured rounds to this file")
	flag.StringVar(&prof.allocs, "memprofile", "", "write an allocation profile to this file, and to FILE.start the one before the measured rounds (go tool pprof -base FILE.start FILE)")
	flag.StringVar(&prof.mutex, "mutexprofile", "", "write a mutex contention profile of the measured rounds to this file")
	flag.StringVar(&prof.block, "blockprofile", "", "write a blocking profile of the measured rounds to this file")
	flag.StringVar(&prof.trace, "trace", "", "write a runtime/trace of the measured rounds to this file (go tool trace)")
	flag.StringVar(&prof.only, "only", "", "measure (and profile) this measurement alone, e.g. \"gateway GET agent\", and print its latencies only")
	flag.Parse()
	stack.TuneGC() // the collector as the all-in-one binary sets it
	if err := run(*n, *rounds, prof); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(n, rounds int, prof profiles) error {
	dir, err := os.MkdirTemp("", "voiceai-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	const key = "vak_bench_admin_key_0123456789abcdef"
	cfg := stack.TestConfig(dir, docstore.Run)
	cfg.BootstrapAdminKey = key
	cfg.RateLimitPerMinute, cfg.RateLimitPerHour = 1<<40, 1<<40 // measure the limiter, never trip it
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	s, err := stack.Start(ctx, cfg, log, nil)
	if err != nil {
		return err
	}
	defer s.Close()

	agentID, err := benchkit.NewClient("http://"+s.Addr, key, 1).CreateAgent(`{"name":"bench","system_prompt":"You help."}`, "")
	if err != nil {
		return err
	}

	// The NATS round trips: on the platform's own connection, in process
	// (the hop a forward over NATS would make here), and over TCP from a
	// connection of its own, the hop between the processes of a split
	// deployment.
	nc, err := nats.Connect(s.NATSURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	// Each connection's requests are answered by an echo on the same
	// connection.
	const inProcessEcho, tcpEcho = "bench.echo.in-process", "bench.echo.tcp"
	for c, subject := range map[*nats.Conn]string{s.Conn(): inProcessEcho, nc: tcpEcho} {
		echo, err := micro.AddService(c, micro.Config{Name: "bench-echo", Version: "1.0.0",
			Endpoint: &micro.EndpointConfig{Subject: subject, Handler: micro.HandlerFunc(func(r micro.Request) { _ = r.Respond(r.Data()) })}})
		if err != nil {
			return err
		}
		defer echo.Stop()
	}

	// The HTTP floor: a net/http server that answers at once, reached by
	// the same client over the same loopback, so the gateway's overhead
	// can be told apart from what any HTTP hop costs on this machine.
	bareLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	bareSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{}`)) })}
	go func() { _ = bareSrv.Serve(bareLn) }()
	defer bareSrv.Close()
	bare, err := dialWire(bareLn.Addr().String(), http.MethodGet, "/", http.Header{})
	if err != nil {
		return err
	}
	defer bare.Close()

	caller := principal.Principal{WorkspaceID: "ws_default", UserID: "sa_admin", KeyID: "bench", Permissions: []string{"all"}}
	inproc := s.AgentsHandler()
	authOnly := s.Gateway().Authenticate(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	gw, err := dialWire(s.Addr, http.MethodGet, "/v1/convai/agents/"+agentID, http.Header{"X-Api-Key": {key}})
	if err != nil {
		return err
	}
	defer gw.Close()
	// The in-process measurements build their request as a server would
	// hand it over, and answer into a writer that keeps nothing.
	local := func(withHeaders func(http.Header)) (*http.Request, error) {
		req, err := http.NewRequest(http.MethodGet, "/v1/convai/agents/"+agentID, nil)
		if err != nil {
			return nil, err
		}
		req.RemoteAddr, req.RequestURI, req.Body = "192.0.2.1:1234", req.URL.RequestURI(), http.NoBody
		withHeaders(req.Header)
		return req, nil
	}
	rec := &discardWriter{header: http.Header{}}
	serveLocal := func(h http.Handler, withHeaders func(http.Header), what string) error {
		req, err := local(withHeaders)
		if err != nil {
			return err
		}
		rec.reset()
		h.ServeHTTP(rec, req)
		if rec.code != 0 && rec.code != 200 { // 0: nothing written, a 200
			return fmt.Errorf("%s: %d", what, rec.code)
		}
		return nil
	}

	measures := map[string]func() error{
		"gateway GET agent": func() error {
			code, err := gw.do()
			if err == nil && code != 200 {
				err = fmt.Errorf("gateway GET: %d", code)
			}
			return err
		},
		"in-process handler": func() error {
			return serveLocal(inproc, caller.SetHeaders, "in-process GET")
		},
		"bare HTTP round trip": func() error {
			_, err := bare.do()
			return err
		},
		"NATS round trip": func() error {
			_, err := s.Conn().Request(inProcessEcho, []byte("ping"), 5*time.Second)
			return err
		},
		"NATS over TCP": func() error {
			_, err := nc.Request(tcpEcho, []byte("ping"), 5*time.Second)
			return err
		},
		"auth + rate limit": func() error {
			return serveLocal(authOnly, func(h http.Header) { h.Set("X-Api-Key", key) }, "auth")
		},
	}
	order := []string{"gateway GET agent", "in-process handler", "bare HTTP round trip", "NATS round trip", "NATS over TCP", "auth + rate limit"}
	if err := warmUp(measures["gateway GET agent"]); err != nil {
		return err
	}
	for _, name := range order {
		for range 200 {
			if err := measures[name](); err != nil {
				return err
			}
		}
	}
	stop, err := prof.start()
	if err != nil {
		return err
	}
	samples := map[string][]time.Duration{}
	costs := map[string]*cost{}
	for _, name := range order {
		costs[name] = &cost{}
	}
	if prof.only != "" {
		if measures[prof.only] == nil {
			_ = stop()
			return fmt.Errorf("-only: no measurement %q (%s)", prof.only, strings.Join(order, ", "))
		}
		order = []string{prof.only}
	}
	for range rounds {
		for _, name := range order {
			before := readCost()
			for range n / rounds {
				start := time.Now()
				region := trace.StartRegion(ctx, name) // a request, in -trace
				err := measures[name]()
				region.End()
				if err != nil {
					_ = stop()
					return err
				}
				samples[name] = append(samples[name], time.Since(start))
			}
			costs[name].add(readCost().minus(before))
		}
	}
	if err := stop(); err != nil {
		return err
	}
	if prof.only != "" {
		l := sorted(samples[prof.only])
		fmt.Printf("%s: p50 %s p99 %s, %.1f allocs and %.0f bytes per request\n", prof.only, us(l.at(.5)), us(l.at(.99)),
			float64(costs[prof.only].mallocs)/float64(len(l)), float64(costs[prof.only].bytes)/float64(len(l)))
		return nil
	}
	onOne, err := remeasure(n, measures, oneCPU, "gateway GET agent", "in-process handler", "NATS round trip")
	if err != nil {
		return err
	}
	// With the collector off the heap grows by what the requests
	// allocate, into pages it never touched: a first run takes them (5
	// page faults a GET), so that the measured ones meet the collector's
	// absence, not the faults.
	if _, err := remeasure(n, measures, noCollector, "gateway GET agent"); err != nil {
		return err
	}
	noGC, err := remeasure(n, measures, noCollector, "gateway GET agent")
	if err != nil {
		return err
	}
	noGCOne, err := remeasure(n, measures, both(noCollector, oneCPU), "gateway GET agent")
	if err != nil {
		return err
	}

	fmt.Printf("gateway bench: %d requests per measurement in %d interleaved rounds\n\n", n, rounds)
	fmt.Printf("%-22s %10s %10s %10s %10s %8s\n", "measurement", "p50", "p90", "p99", "p99.9", "p99/p50")
	lat := map[string]latencies{}
	for _, name := range order {
		l := sorted(samples[name])
		lat[name] = l
		fmt.Printf("%-22s %10s %10s %10s %10s %7.2fx\n", name, us(l.at(.5)), us(l.at(.9)), us(l.at(.99)), us(l.at(.999)), ratio(l.at(.99), l.at(.5)))
	}
	fmt.Println()
	fmt.Println("per request, the whole process (client, gateway, NATS server, service):")
	fmt.Printf("%-22s %10s %10s %8s %12s %8s\n", "measurement", "allocs", "bytes", "GCs", "GC pauses", "faults")
	for _, name := range order {
		c, reqs := costs[name], float64(len(samples[name]))
		fmt.Printf("%-22s %10.1f %10.0f %8d %12s %8.2f\n", name, float64(c.mallocs)/reqs, float64(c.bytes)/reqs, c.gcs, us(c.pause), float64(c.faults)/reqs)
	}
	for _, name := range []string{"gateway GET agent", "in-process handler"} {
		fmt.Println()
		lat[name].histogram(os.Stdout, name)
	}

	gwLat, in, rtt := lat["gateway GET agent"], lat["in-process handler"], lat["NATS round trip"].at(.5)
	added := gwLat.at(.5) - in.at(.5)
	tail := ratio(gwLat.at(.99), gwLat.at(.5))
	fmt.Println()
	fmt.Printf("gateway / in-process handler (p50):          %.2fx\n", ratio(gwLat.at(.5), in.at(.5)))
	fmt.Printf("gateway p99 / p50:                           %.2fx  (goal <= 3.00x) %s\n", tail, benchkit.Verdict(tail <= 3))
	addedUS := float64(added.Nanoseconds()) / 1000
	fmt.Printf("gateway overhead at p50 (vs in-process):     %.1f µs (goal <= 100 µs) %s\n", addedUS, benchkit.Verdict(addedUS <= 100))
	// What is left of the overhead once the HTTP round trip from the
	// gateway's client is taken out: the gateway's and the service's own
	// work around the handler. The all-in-one's gateway calls the service
	// in process (natsx.Forwarder.InProcess): no NATS hop; the round
	// trips below are what a forward over NATS would add. Medians do not
	// add up exactly; a rough share.
	httpRTT := lat["bare HTTP round trip"].at(.5)
	fmt.Printf("of which a bare HTTP round trip (p50):       %.1f µs; the rest %.1f µs (the forward is in process)\n",
		float64(httpRTT.Nanoseconds())/1000, float64((added-httpRTT).Nanoseconds())/1000)
	fmt.Printf("a NATS round trip in process (p50):          %.1f µs (what a forward over NATS would add)\n", float64(rtt.Nanoseconds())/1000)
	fmt.Printf("a NATS round trip over TCP (p50):            %.1f µs (the hop between a split deployment's processes)\n",
		float64(lat["NATS over TCP"].at(.5).Nanoseconds())/1000)
	// Where the tail comes from: the machine's own round trip has one as
	// long, and on one CPU, where no hand-off between goroutines has to
	// wake the other CPU, most of it goes.
	rawTrip := lat["NATS round trip"]
	gwOne, inOne, echoOne := sorted(onOne["gateway GET agent"]), sorted(onOne["in-process handler"]), sorted(onOne["NATS round trip"])
	fmt.Printf("NATS round trip p99 / p50:                   %.2fx  (the machine's own tail, same rounds)\n", ratio(rawTrip.at(.99), rawTrip.at(.5)))
	fmt.Printf("on one CPU (GOMAXPROCS=1), %d requests each: gateway p50 %s p99 %s = %.2fx; NATS round trip %.2fx\n",
		len(gwOne), us(gwOne.at(.5)), us(gwOne.at(.99)), ratio(gwOne.at(.99), gwOne.at(.5)), ratio(echoOne.at(.99), echoOne.at(.5)))
	fmt.Printf("on one CPU, the gateway's overhead at p50:   %.1f µs (in-process handler %s): what is left without waking the other CPU\n",
		float64((gwOne.at(.5)-inOne.at(.5)).Nanoseconds())/1000, us(inOne.at(.5)))
	// How long a woken goroutine waited for a CPU: every hand-off on a
	// request's path is such a wait.
	gwWaits, echoWaits := costs["gateway GET agent"].waits, costs["NATS round trip"].waits
	fmt.Printf("a woken goroutine's wait for a CPU:          p90 %s p99 %s in the gateway rounds; p90 %s p99 %s in the NATS round trips\n",
		us(gwWaits.at(.9)), us(gwWaits.at(.99)), us(echoWaits.at(.9)), us(echoWaits.at(.99)))
	// And the collector's share: the same requests with it off.
	gwNoGC, gwNoGCOne := sorted(noGC["gateway GET agent"]), sorted(noGCOne["gateway GET agent"])
	fmt.Printf("with the collector off (GOGC=off), %d requests each: gateway p99/p50 %.2fx; on one CPU %.2fx\n",
		len(gwNoGC), ratio(gwNoGC.at(.99), gwNoGC.at(.5)), ratio(gwNoGCOne.at(.99), gwNoGCOne.at(.5)))
	auth := lat["auth + rate limit"].at(.5)
	authUS := float64(auth.Nanoseconds()) / 1000
	fmt.Printf("auth + rate limit per request (p50):         %.1f µs (goal < 100 µs) %s\n", authUS, benchkit.Verdict(authUS < 100))
	fmt.Printf("auth + rate limit in NATS round trips:       %.2f\n", ratio(auth, rtt))
	return nil
}

// A setting a re-measurement runs under, and how it is undone.
type setting func() (restore func())

// oneCPU runs with one P: every goroutine hand-off on a request's path
// (client, gateway, NATS server, service) is then a switch on the same
// thread, never a wake-up of an idle CPU, which on a virtual machine
// costs tens of microseconds when it comes.
func oneCPU() func() {
	prev := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(prev) }
}

// noCollector runs with the garbage collector off (from a fresh heap):
// no request meets a collection's assists, write barriers or the CPU its
// workers take.
func noCollector() func() {
	runtime.GC()
	prev := debug.SetGCPercent(-1)
	return func() { debug.SetGCPercent(prev) }
}

// both is a and b at once.
func both(a, b setting) setting {
	return func() func() {
		undoA, undoB := a(), b()
		return func() { undoB(); undoA() }
	}
}

// remeasure measures the named requests again, n each, under s.
func remeasure(n int, measures map[string]func() error, s setting, names ...string) (map[string][]time.Duration, error) {
	defer s()()
	samples := map[string][]time.Duration{}
	for _, name := range names {
		for range n {
			start := time.Now()
			if err := measures[name](); err != nil {
				return nil, err
			}
			samples[name] = append(samples[name], time.Since(start))
		}
	}
	return samples, nil
}

func us(d time.Duration) string        { return fmt.Sprintf("%.1fµs", float64(d.Nanoseconds())/1000) }
func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// warmUp sends GETs through the gateway, 500 at a time, until the process
// has collected four times (package warmup): 200 GETs left the measured
// rounds faulting two pages a GET.
func warmUp(get func() error) error {
	return warmup.UntilCollected(4, 100, func(int) error {
		for range 500 {
			if err := get(); err != nil {
				return err
			}
		}
		return nil
	})
}
