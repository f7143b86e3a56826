// Package benchproc runs the platform's binaries as separate processes
// for the benchmarks, as production runs them, and reads their peak
// memory.
package benchproc

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/services/allinone/internal/child"
)

// Proc is one running binary.
type Proc struct {
	*child.Proc
	Metrics string // its metrics and profiler address, or "off"
}

// Start runs bin with the environment plus env, and its internal endpoint
// on metricsAddr ("off" for none).
func Start(bin string, env []string, metricsAddr string) (*Proc, error) {
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), env...), "VOICEAI_METRICS_ADDR="+metricsAddr)
	cp, err := child.Start(cmd, nil)
	if err != nil {
		return nil, err
	}
	return &Proc{Proc: cp, Metrics: metricsAddr}, nil
}

// Stop interrupts the process and waits for it, killing it after 15 s.
func (p *Proc) Stop() { p.Proc.Stop(os.Interrupt, 15*time.Second) }

// PeakRSSKiB is the process's peak resident set (VmHWM).
func (p *Proc) PeakRSSKiB() int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			n, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return n
		}
	}
	return 0
}

// Usage is what a process has used so far: CPU time (user and system,
// to the clock tick, 10 ms) and the page faults that found no page
// (minor: the first touch of memory the process had not used yet).
type Usage struct {
	CPU    time.Duration
	Faults int64
}

// Minus is what was used between o and u.
func (u Usage) Minus(o Usage) Usage { return Usage{CPU: u.CPU - o.CPU, Faults: u.Faults - o.Faults} }

// Plus is u and o used together.
func (u Usage) Plus(o Usage) Usage { return Usage{CPU: u.CPU + o.CPU, Faults: u.Faults + o.Faults} }

// UsageOf is what process pid has used so far; zero where /proc cannot
// tell.
func UsageOf(pid int) Usage {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}
	}
	// The fields after the command's name, which is in parentheses and
	// may hold spaces: minflt is the 8th of them, utime and stime the
	// 12th and 13th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return Usage{}
	}
	minflt, _ := strconv.ParseInt(f[7], 10, 64)
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const tick = 10 * time.Millisecond // USER_HZ, 100 on Linux
	return Usage{CPU: time.Duration(utime+stime) * tick, Faults: minflt}
}

// ResetPeakRSS starts a new peak measurement (clear_refs 5).
func (p *Proc) ResetPeakRSS() {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.Cmd.Process.Pid), []byte("5"), 0)
}

// Build builds each package (a path from the repository's root, such as
// "./services/allinone") into dir, and returns each binary by the
// package's last path element.
func Build(dir string, pkgs ...string) (map[string]string, error) {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..", "..", "..")
	bins := map[string]string{}
	for _, pkg := range pkgs {
		name := filepath.Base(pkg)
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s: %v\n%s", pkg, err, b)
		}
		bins[name] = out
	}
	return bins, nil
}

// MetricsAddr is a free address for a process's metrics and profiler
// endpoint when profiling, else "off".
func MetricsAddr(profiling bool) (string, error) {
	if !profiling {
		return "off", nil
	}
	return FreePort()
}

// Profile writes a CPU profile of the process over the next d to file.
func (p *Proc) Profile(d time.Duration, file string) error {
	return p.pprof(fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), file)
}

// ProfileWhenUp is Profile for a process just started: it waits, for 5 s
// at the most, until the profiler answers.
func (p *Proc) ProfileWhenUp(d time.Duration, file string) error {
	for range 500 {
		if resp, err := http.Get("http://" + p.Metrics + "/healthz"); err == nil {
			resp.Body.Close()
			return p.Profile(d, file)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("the profiler at %s never answered", p.Metrics)
}

// AllocProfile writes what the process allocates over the next d to
// file (where a GC's work comes from).
func (p *Proc) AllocProfile(d time.Duration, file string) error {
	return p.pprof(fmt.Sprintf("allocs?seconds=%d", int(d.Seconds())), file)
}

// HeapProfile writes the process's live heap (after a collection) to file.
func (p *Proc) HeapProfile(file string) error { return p.pprof("heap?gc=1", file) }

// pprof saves the process's /debug/pprof/<what> to file.
func (p *Proc) pprof(what, file string) error {
	if p.Metrics == "off" {
		return fmt.Errorf("no profiler endpoint: start the process with a metrics address")
	}
	resp, err := http.Get("http://" + p.Metrics + "/debug/pprof/" + what)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %s", resp.Status)
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// FreePort is a loopback address free at the time of the call.
func FreePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// WaitReady polls base+"/readyz" until it answers 200; past the timeout
// it stops p and returns its logs in the error.
func (p *Proc) WaitReady(base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			p.Stop()
			return fmt.Errorf("platform not ready after %s: %s", timeout, p.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Platform is a running all-in-one stack.
type Platform struct {
	*Proc
	Base    string // its HTTP base URL
	NATSURL string // its embedded NATS server
}

// StartPlatform runs the all-in-one binary bin on dataDir as the benches
// need it (adminKey bootstrapped, no embedded runners, no rate limits,
// warn logs), plus env, and returns once it serves, or after ready with
// its logs in the error.
func StartPlatform(bin, dataDir, adminKey, metricsAddr string, ready time.Duration, env ...string) (*Platform, error) {
	addr, err := FreePort()
	if err != nil {
		return nil, err
	}
	pr, err := Start(bin, append([]string{
		"VOICEAI_DATA_DIR=" + dataDir, "VOICEAI_HTTP_ADDR=" + addr, "VOICEAI_EMBEDDED_NATS_PORT=-1",
		"VOICEAI_BOOTSTRAP_ADMIN_KEY=" + adminKey, "VOICEAI_EMBEDDED_RUNNERS=0", "VOICEAI_LOG_LEVEL=warn",
		"VOICEAI_RATE_LIMIT_PER_MINUTE=100000000", "VOICEAI_RATE_LIMIT_PER_HOUR=100000000",
	}, env...), metricsAddr)
	if err != nil {
		return nil, err
	}
	p := &Platform{Proc: pr, Base: "http://" + addr}
	if err := pr.WaitReady(p.Base, ready); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dataDir, "nats.url"))
	if err != nil {
		pr.Stop()
		return nil, err
	}
	p.NATSURL = strings.TrimSpace(string(b))
	return p, nil
}

// JetStream connects to the platform's NATS server, as a producer or an
// observer beside it would; the func returned closes the connection.
func (p *Platform) JetStream() (jetstream.JetStream, func(), error) {
	nc, err := nats.Connect(p.NATSURL)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return js, nc.Close, nil
}

// WithJetStream calls fn on a connection of JetStream's, and closes it
// once fn returns.
func (p *Platform) WithJetStream(fn func(jetstream.JetStream) error) error {
	js, closeJS, err := p.JetStream()
	if err != nil {
		return err
	}
	defer closeJS()
	return fn(js)
}
