// Package child runs a platform binary as a child process, as the benches
// and the multi-process tests do: what it writes to stderr (its log) is
// kept and each line offered to a watcher, and it is stopped with a
// signal, or killed once a grace period has passed.
package child

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Proc is one running child process.
type Proc struct {
	Cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	logs bytes.Buffer
	// exitedAt and exit (its status) are set before done is closed.
	exitedAt time.Time
	exit     string
}

// Start starts cmd (its Env set by the caller), its stdout discarded
// unless the caller set one. onLine, when not nil, sees each line of
// stderr as it is kept; it must not keep the slice.
func Start(cmd *exec.Cmd, onLine func(line []byte)) (*Proc, error) {
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if cmd.Stdout == nil {
		cmd.Stdout = io.Discard
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go p.scan(stderr, onLine)
	return p, nil
}

func (p *Proc) scan(stderr io.Reader, onLine func([]byte)) {
	defer close(p.done)
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		p.mu.Lock()
		p.logs.Write(line)
		p.logs.WriteByte('\n')
		p.mu.Unlock()
		if onLine != nil {
			onLine(line)
		}
	}
	_ = p.Cmd.Wait()
	p.exitedAt, p.exit = time.Now(), p.Cmd.ProcessState.String()
}

// Done is closed once the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exit is when the process exited and its status; only once Done is
// closed.
func (p *Proc) Exit() (at time.Time, status string) {
	<-p.done
	return p.exitedAt, p.exit
}

// Logs is what the process has written to stderr so far.
func (p *Proc) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// Stop sends sig and waits for the process to exit, killing it after
// grace.
func (p *Proc) Stop(sig os.Signal, grace time.Duration) {
	_ = p.Cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill ends the process abruptly, as a crash would, and waits for it.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.done
}
