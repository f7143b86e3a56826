package stack

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/natsx"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	testingadapters "github.com/voiceai-platform/voiceai/services/testing/adapters"
	testingapp "github.com/voiceai-platform/voiceai/services/testing/app"
)

// consumersOn counts the consumers of a stream.
func consumersOn(t *testing.T, js jetstream.JetStream, stream string) int {
	t.Helper()
	str, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// consumerNames lists a stream's consumers with what each has delivered
// and has pending, for a failure's message.
func consumerNames(t *testing.T, js jetstream.JetStream, stream string) string {
	t.Helper()
	str, err := js.Stream(context.Background(), stream)
	if err != nil {
		return err.Error()
	}
	var out []string
	infos := str.ListConsumers(context.Background())
	for info := range infos.Info() {
		out = append(out, fmt.Sprintf("%s (filter %s, delivered %d, pending %d, waiting %d, last active %s)", info.Name, info.Config.FilterSubject,
			info.Delivered.Consumer, info.NumPending, info.NumWaiting, info.Delivered.Last))
	}
	return strings.Join(out, "; ")
}

// unreadGET sends a GET on a connection with a small receive buffer and
// never reads the answer: a reader that holds what it asked for.
func unreadGET(t *testing.T, addr, path, key string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nx-api-key: %s\r\n\r\n", path, addr, key); err != nil {
		t.Fatal(err)
	}
	return conn
}

// heapInUse is the process's live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Finding 1 of the abuse review: one key opened many reads of a large
// invocation, never read the answers and hung up much later; the testing
// service then answered nobody (its reads hung on a lost message, every
// slot held). Now, while such reads are held open, another workspace's
// reads answer at once; once they hang up, every read's consumer is gone,
// memory is back, and the platform is ready and serves the first
// workspace too.
func TestAbandonedReadsOfALargeInvocationStarveNoOne(t *testing.T) {
	// Not in parallel with the other tests: it reads the process heap, which the other tests' stacks would grow.
	s := startHostile(t)
	other := createWorkspace(t, s, "Other").APIKey
	agent := agentWith(t, s)
	test := createTest(t, s, hoursTest)
	r := call(t, s, "POST", "/v1/convai/agents/"+agent+"/run-tests", adminKey,
		`{"tests":[`+strings.TrimSuffix(strings.Repeat(`{"test_id":"`+test+`"},`, 200), ",")+`],"repeat_count":50}`)
	if r.Code != 200 {
		t.Fatalf("run-tests: %d %.300s", r.Code, r.Body)
	}
	big := r.JSON(t)["id"].(string)
	eventually(t, 3*time.Minute, "the 10,000 runs are done", func() bool {
		return getInvocation(t, s, big).Status == "completed"
	})

	// Workspace B's own agent, test and invocation.
	agentB := createAgent(t, s, other, `{"name":"B","conversation_config":{"agent":{"prompt":{"prompt":"Our opening hours are nine to five."}}}}`)
	rt := call(t, s, "POST", "/v1/convai/agent-testing/create", other, hoursTest)
	if rt.Code != 200 {
		t.Fatalf("B's test: %d %s", rt.Code, rt.Body)
	}
	ri := call(t, s, "POST", "/v1/convai/agents/"+agentB+"/run-tests", other,
		`{"tests":[{"test_id":"`+rt.JSON(t)["id"].(string)+`"}]}`)
	if ri.Code != 200 {
		t.Fatalf("B's run-tests: %d %s", ri.Code, ri.Body)
	}
	bInvocation := "/v1/convai/test-invocations/" + ri.JSON(t)["id"].(string)
	bServed := func(when string) {
		t.Helper()
		for _, path := range []string{"/v1/convai/agent-testing", bInvocation, "/v1/convai/test-invocations?agent_id=" + agentB} {
			began := time.Now()
			if r := call(t, s, "GET", path, other, ""); r.Code != 200 || time.Since(began) > 10*time.Second {
				t.Fatalf("%s, workspace B's GET %s answered %d after %s: %.200s", when, path, r.Code, time.Since(began), r.Body)
			}
		}
		if r := call(t, s, "GET", "/readyz", "", ""); r.Code != 200 {
			t.Fatalf("%s, /readyz answered %d %s", when, r.Code, r.Body)
		}
	}
	bServed("before")

	js := testenv.JetStreamAt(t, s.NATSURL)
	baseline, heap := consumersOn(t, js, "TESTRUNS"), heapInUse()
	const readers = 95
	var conns []net.Conn
	for range readers {
		conns = append(conns, unreadGET(t, s.Addr, "/v1/convai/test-invocations/"+big, adminKey))
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	// A's reads take its share of the runs log's read slots, each holding
	// a consumer while its answer waits for its reader; the others wait
	// their turn.
	eventually(t, time.Minute, "workspace A's share of reads is held", func() bool {
		return consumersOn(t, js, "TESTRUNS") == baseline+testingapp.MaxScans/2
	})
	bServed("with 95 unread answers of workspace A")

	for _, c := range conns {
		_ = c.Close()
	}
	conns = nil
	// A hang-up reaches its read at once, or, where its cancel missed the
	// read, once the read has waited StreamIdle for its next chunk to be
	// asked for; the read then deletes its consumer, or, where that
	// delete timed out on the loaded server, the server does once the
	// consumer has been inactive for ReadConsumerInactive.
	within := natsx.StreamIdle + testingadapters.ReadConsumerInactive + 5*time.Second
	hungUp := time.Now()
	for deadline := hungUp.Add(within); consumersOn(t, js, "TESTRUNS") != baseline; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s, every read's consumer gone; left on TESTRUNS: %s", within, consumerNames(t, js, "TESTRUNS"))
		}
	}
	t.Logf("every read's consumer gone %s after the readers hung up", time.Since(hungUp).Round(time.Millisecond))
	bServed("after workspace A hung up")
	if r := call(t, s, "GET", "/v1/convai/test-invocations/"+big, adminKey, ""); r.Code != 200 {
		t.Fatalf("workspace A's own read afterwards: %d %.200s", r.Code, r.Body)
	}
	if now := heapInUse(); now > heap+128<<20 {
		t.Fatalf("the heap grew from %d MiB to %d MiB", heap>>20, now>>20)
	}
}
