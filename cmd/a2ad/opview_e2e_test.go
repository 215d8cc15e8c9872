package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/internal/testkit"
)

// adminDo sends a request to the admin listener of m and returns the
// status and body.
func adminDo(tb testing.TB, m *Main, method, path string) (int, []byte) {
	tb.Helper()
	req, err := http.NewRequest(method, "http://"+m.AdminAddr()+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	resp, b := testkit.RoundTrip(tb, nil, req)
	return resp.StatusCode, b
}

// adminJSON GETs path, which must answer 200, and decodes it into out.
func adminJSON(tb testing.TB, m *Main, path string, out any) []byte {
	tb.Helper()
	code, b := adminDo(tb, m, http.MethodGet, path)
	if code != http.StatusOK {
		tb.Fatalf("GET %s: HTTP %d %s", path, code, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		tb.Fatalf("GET %s: %v: %s", path, err, b)
	}
	return b
}

var (
	bytesRE    = regexp.MustCompile(`"(sizeBytes|dataBytes|uptimeSeconds)": \d+`)
	catVerRE   = regexp.MustCompile(`"version": "[0-9a-f]{16}"`)
	storeRE    = regexp.MustCompile(`"path": "[^"]*a2ad\.db"`)
	pageTokRE  = regexp.MustCompile(`("nextPageToken": "|--page-token )[A-Za-z0-9_-]{8,}`)
	tempPathRE = regexp.MustCompile(`/[^ "]*/a2ad\.db`)
)

// opNormalizer is normalizer plus the overview's sizes, uptime and paths,
// and page tokens (which encode ids), numbered in order of appearance.
type opNormalizer struct {
	ids    normalizer
	tokens map[string]string
}

func newOpNormalizer() *opNormalizer {
	return &opNormalizer{ids: normalizer{}, tokens: map[string]string{}}
}

func (n *opNormalizer) apply(s string) string {
	s = bytesRE.ReplaceAllString(s, `"$1": <n>`)
	s = catVerRE.ReplaceAllString(s, `"version": "<catalog-version>"`)
	s = storeRE.ReplaceAllString(s, `"path": "<store>"`)
	s = tempPathRE.ReplaceAllString(s, `<store>`)
	s = pageTokRE.ReplaceAllStringFunc(s, func(m string) string {
		i := strings.LastIndexAny(m, `" `) + 1
		v, ok := n.tokens[m[i:]]
		if !ok {
			v = fmt.Sprintf("<token-%d>", len(n.tokens)+1)
			n.tokens[m[i:]] = v
		}
		return m[:i] + v
	})
	// The default admin address is not a random port: keep it.
	s = strings.ReplaceAll(s, "127.0.0.1:8081", "<default-admin>")
	s = n.ids.apply([]byte(s))
	return strings.ReplaceAll(s, "<default-admin>", "127.0.0.1:8081")
}

// transcript collects requests and answers for a golden file.
type transcript struct {
	tb testing.TB
	m  *Main
	n  *opNormalizer
	b  strings.Builder
}

func newTranscript(tb testing.TB, m *Main) *transcript {
	return &transcript{tb: tb, m: m, n: newOpNormalizer()}
}

// do sends the request, records it with its indented answer and returns
// the status and body.
func (tr *transcript) do(method, path string) (int, []byte) {
	tr.tb.Helper()
	code, body := adminDo(tr.tb, tr.m, method, path)
	var ind bytes.Buffer
	if err := json.Indent(&ind, body, "", "  "); err != nil {
		tr.tb.Fatalf("%s %s: not JSON: %s", method, path, body)
	}
	fmt.Fprintf(&tr.b, "%s %s\nHTTP %d\n%s\n\n", method, tr.n.apply(path), code, tr.n.apply(strings.TrimSpace(ind.String())))
	return code, body
}

// note adds text (normalized) to the transcript.
func (tr *transcript) note(s string) { tr.b.WriteString(tr.n.apply(s)) }

func (tr *transcript) golden(name string) {
	tr.tb.Helper()
	path := filepath.Join("testdata", "wire", name+".golden")
	got := tr.b.String()
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tr.tb.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tr.tb.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		tr.tb.Errorf("%s differs from %s (-want +got):\n%s", name, path, diff)
	}
}

// TestOpViewGoldenEmpty pins every endpoint's shape on an empty store of
// a server without a keys file: arrays are [], keys is null, every state
// is 0.
func TestOpViewGoldenEmpty(t *testing.T) {
	m := startMain(t, nil)
	tr := newTranscript(t, m)
	for _, p := range []string{"/admin/v1/overview", "/admin/v1/tasks", "/admin/v1/tasks?caller=", "/admin/v1/dead-letters"} {
		if code, body := tr.do(http.MethodGet, p); code != http.StatusOK {
			t.Errorf("GET %s: HTTP %d %s", p, code, body)
		}
	}
	tr.golden("opview-empty")

	var o admin.Overview
	adminJSON(t, m, "/admin/v1/overview", &o)
	cat := m.catalog.Load()
	if o.Catalog.Version != cat.Version || o.Catalog.Path != exampleCatalog || o.Store.Path != m.Config.Store || o.Version != Version() {
		t.Errorf("overview catalog %+v, store %+v, version %q", o.Catalog, o.Store, o.Version)
	}
	fi, err := os.Stat(m.Config.Store)
	if err != nil || o.Store.SizeBytes != fi.Size() || o.Store.DataBytes <= 0 || o.Store.DataBytes > o.Store.SizeBytes {
		t.Errorf("store sizes %+v; file %d bytes (%v)", o.Store, fi.Size(), err)
	}
	if since := time.Since(o.StartedAt); since < 0 || since > time.Minute || o.UptimeSeconds < 0 || o.UptimeSeconds > 60 {
		t.Errorf("startedAt %v, uptime %d s", o.StartedAt, o.UptimeSeconds)
	}
}

// opSend sends a message as the caller with key ("" anonymous) and
// returns the task id.
func opSend(tb testing.TB, k *keyed, key string, params map[string]any) string {
	tb.Helper()
	resp := k.ok(tb, key, "message/send", params)
	task := resultTask(tb, resp)
	// Ids are time-ordered to the millisecond: keep the order of creation
	// the order of listing.
	time.Sleep(3 * time.Millisecond)
	return task["id"].(string)
}

// waitTask polls the operator view until task id is in state.
func waitTask(tb testing.TB, m *Main, id, state string) {
	tb.Helper()
	eventually(tb, 15*time.Second, "task "+id+" "+state, func() bool {
		var v admin.TaskView
		adminJSON(tb, m, "/admin/v1/tasks/"+id, &v)
		return string(v.Task.State) == state
	})
}

// opFixture is a keyed server with anonymous access and these tasks, in
// order of creation: an anonymous echo with a webhook that answers 404
// (so a dead letter), acme's echo, a long sleep of bob (working), acme's
// sleep of 0 seconds.
type opFixture struct {
	k                        *keyed
	hook, echo, sleep, quick string
}

func newOpFixture(tb testing.TB) *opFixture { return newOpFixtureOf(tb, exampleCatalog) }

// newOpFixtureOf is newOpFixture serving the catalogue at path.
func newOpFixtureOf(tb testing.TB, catalog string) *opFixture {
	tb.Helper()
	hook := newHookReceiver(tb, func(int) int { return http.StatusNotFound })
	f := &opFixture{k: startKeyed(tb, func(c *Config) { anonymousPartners(c); c.RatePerSecond = 0; c.Catalog = catalog })}
	k := f.k
	f.hook = opSend(tb, k, "", pushSendParams("m-hook", "demo::echo", map[string]any{"message": "hi"}, true,
		map[string]any{"id": "hook-1", "url": hook.URL, "token": "tok-secret", "authentication": map[string]any{"schemes": []any{"Bearer"}, "credentials": "cred-secret"}}))
	f.echo = opSend(tb, k, k.acme, sendParams("m-echo", "demo::echo", map[string]any{"message": "hello"}, true))
	f.sleep = opSend(tb, k, k.bob, sendParams("m-sleep", "demo::sleep", map[string]any{"seconds": 300}, false))
	f.quick = opSend(tb, k, k.acme, sendParams("m-quick", "demo::sleep", map[string]any{"seconds": 0}, true))
	waitTask(tb, k.m, f.sleep, "working")
	eventually(tb, 15*time.Second, "a dead letter", func() bool {
		var l admin.DeadLetterList
		adminJSON(tb, k.m, "/admin/v1/dead-letters", &l)
		return len(l.DeadLetters) == 1
	})
	return f
}

// TestOpViewGolden pins every endpoint's shape on a store with tasks of
// three callers, a dead letter and an operator's cancel.
func TestOpViewGolden(t *testing.T) {
	f := newOpFixture(t)
	m := f.k.m
	tr := newTranscript(t, m)
	// Number the ids in order of creation.
	for _, id := range []string{f.hook, f.echo, f.sleep, f.quick} {
		tr.n.ids.apply([]byte(id))
	}
	for _, p := range []string{
		"/admin/v1/overview",
		"/admin/v1/tasks",
		"/admin/v1/tasks?caller=acme",
		"/admin/v1/tasks?caller=",
		"/admin/v1/tasks?state=working",
		"/admin/v1/tasks?function=demo::sleep&limit=1",
		"/admin/v1/tasks/" + f.hook,
		"/admin/v1/dead-letters",
	} {
		if code, body := tr.do(http.MethodGet, p); code != http.StatusOK {
			t.Errorf("GET %s: HTTP %d %s", p, code, body)
		}
	}
	if code, body := tr.do(http.MethodPost, "/admin/v1/tasks/"+f.sleep+"/cancel"); code != http.StatusOK {
		t.Errorf("cancel: HTTP %d %s", code, body)
	}
	tr.do(http.MethodGet, "/admin/v1/overview")
	tr.golden("opview-tasks")

	// Secrets never show.
	_, body := adminDo(t, m, http.MethodGet, "/admin/v1/tasks/"+f.hook)
	for _, s := range []string{"tok-secret", "cred-secret", f.k.acme, f.k.ops} {
		if bytes.Contains(body, []byte(s)) {
			t.Errorf("the task view shows the secret %q", s)
		}
	}

	// The cancel went through the task service: the owner sees it, and
	// the audit trail records the operator.
	task := resultTask(t, f.k.ok(t, f.k.bob, "tasks/get", map[string]any{"id": f.sleep}))
	if state(task) != "canceled" {
		t.Errorf("bob sees his task %s", state(task))
	}
	var found bool
	for _, r := range f.k.auditRecords(t) {
		if r["operator"] == true {
			found = true
			want := map[string]any{"audit": true, "operator": true, "action": "tasks/cancel", "task_id": f.sleep,
				"task_caller": "bob", "outcome": "ok", "reason": "canceled", "message": "operator action"}
			for k, v := range want {
				if r[k] != v {
					t.Errorf("audit record %v: %s = %v, want %v", r, k, r[k], v)
				}
			}
		}
	}
	if !found {
		t.Error("no audit record of the operator's cancel")
	}
	if !strings.Contains(f.k.oplog.String(), `"message":"task canceled by the operator"`) {
		t.Errorf("operational log: %s", f.k.oplog.String())
	}
}

// pageToken is a page token as the operator view spells it (base64url of
// a kind byte, 't' for tasks or 'd' for dead letters, and the position),
// to pass one endpoint's token to another.
func pageToken(kind byte, pos []byte) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{kind}, pos...))
}

// TestOpViewErrors pins every error: one status and one message each.
func TestOpViewErrors(t *testing.T) {
	f := newOpFixture(t)
	m := f.k.m
	for _, tt := range []struct {
		method, path string
		code         int
		msg          string
	}{
		{"GET", "/admin/v1/tasks?state=done", 400, `state: "done" is not a task state (submitted, working, input-required, auth-required, unknown, completed, failed, canceled, rejected)`},
		{"GET", "/admin/v1/tasks?state=", 400, `state: "" is not a task state (submitted, working, input-required, auth-required, unknown, completed, failed, canceled, rejected)`},
		{"GET", "/admin/v1/tasks?state=WORKING", 400, `state: "WORKING" is not a task state (submitted, working, input-required, auth-required, unknown, completed, failed, canceled, rejected)`},
		{"GET", "/admin/v1/tasks?limit=0", 400, `limit: must be an integer from 1 to 1000, not "0"`},
		{"GET", "/admin/v1/tasks?limit=-1", 400, `limit: must be an integer from 1 to 1000, not "-1"`},
		{"GET", "/admin/v1/tasks?limit=1001", 400, `limit: must be an integer from 1 to 1000, not "1001"`},
		{"GET", "/admin/v1/tasks?limit=ten", 400, `limit: must be an integer from 1 to 1000, not "ten"`},
		{"GET", "/admin/v1/tasks?limit=", 400, `limit: must be an integer from 1 to 1000, not ""`},
		{"GET", "/admin/v1/tasks?page_token=%25%25", 400, `page_token: malformed; pass back the nextPageToken of an earlier page of this endpoint`},
		{"GET", "/admin/v1/tasks?page_token=", 400, `page_token: malformed; pass back the nextPageToken of an earlier page of this endpoint`},
		{"GET", "/admin/v1/tasks?page_token=" + pageToken('d', make([]byte, 8)), 400, `page_token: malformed; pass back the nextPageToken of an earlier page of this endpoint`},
		{"GET", "/admin/v1/tasks?function=", 400, `function: empty (leave it out to match every function)`},
		{"GET", "/admin/v1/tasks?stat=working", 400, `unknown parameter "stat": the parameters are state, function, caller, limit, page_token`},
		{"GET", "/admin/v1/tasks?state=working&state=completed", 400, `state: given 2 times, give it once`},
		{"GET", "/admin/v1/dead-letters?limit=0", 400, `limit: must be an integer from 1 to 1000, not "0"`},
		{"GET", "/admin/v1/dead-letters?after=1", 400, `unknown parameter "after": the parameters are limit, page_token`},
		{"GET", "/admin/v1/dead-letters?page_token=" + pageToken('t', []byte("x")), 400, `page_token: malformed; pass back the nextPageToken of an earlier page of this endpoint`},
		{"GET", "/admin/v1/dead-letters?page_token=" + pageToken('d', []byte("1234567")), 400, `page_token: malformed; pass back the nextPageToken of an earlier page of this endpoint`},
		{"GET", "/admin/v1/overview?verbose=1", 400, `unknown parameter "verbose": this endpoint takes none`},
		{"GET", "/admin/v1/tasks/" + f.echo + "?events=0", 400, `unknown parameter "events": this endpoint takes none`},
		{"GET", "/admin/v1/tasks/no-such-task", 404, `no task has id "no-such-task"`},
		{"GET", "/admin/v1/tasks/" + f.echo + "x", 404, `no task has id "` + f.echo + `x"`},
		{"GET", "/admin/v1/tasks/a%2Fb", 404, `no task has id "a/b"`},
		{"POST", "/admin/v1/tasks/no-such-task/cancel", 404, `no task has id "no-such-task"`},
		{"POST", "/admin/v1/tasks/" + f.echo + "/cancel", 409, `task "` + f.echo + `" is completed: only a task that is not terminal can be canceled`},
		{"GET", "/admin/v1/tasks/" + f.echo + "/cancel", 405, `Method Not Allowed`},
		{"GET", "/admin/v1/nope", 404, `Not Found`},
	} {
		code, body := adminDo(t, m, tt.method, tt.path)
		want, _ := json.Marshal(admin.ErrorBody{Message: tt.msg})
		if code != tt.code || strings.TrimSpace(string(body)) != string(want) {
			t.Errorf("%s %s: HTTP %d %s\nwant HTTP %d %s", tt.method, tt.path, code, body, tt.code, want)
		}
	}
	// A refused cancel changes nothing.
	var v admin.TaskView
	adminJSON(t, m, "/admin/v1/tasks/"+f.echo, &v)
	if v.Task.State != "completed" || len(v.Events) == 0 || *v.Events[len(v.Events)-1].State != "completed" {
		t.Errorf("after a refused cancel: %+v", v)
	}
}

// TestOpViewPaging pages through every combination of filters with
// several limits: the pages hold every matching task exactly once,
// newest id first, and a page token from one query goes on from where
// its page ended.
func TestOpViewPaging(t *testing.T) {
	k := startKeyed(t, func(c *Config) { anonymousPartners(c); c.RatePerSecond = 0 })
	keys := []string{"", k.acme, k.bob}
	var sleeping []string
	for i := range 18 {
		key := keys[i%3]
		switch i % 4 {
		case 0, 1:
			opSend(t, k, key, sendParams(fmt.Sprintf("m%d", i), "demo::echo", map[string]any{}, true))
		case 2:
			opSend(t, k, key, sendParams(fmt.Sprintf("m%d", i), "demo::sleep", map[string]any{"seconds": 0}, true))
		case 3:
			sleeping = append(sleeping, opSend(t, k, key, sendParams(fmt.Sprintf("m%d", i), "demo::sleep", map[string]any{"seconds": 300}, false)))
		}
	}
	for _, id := range sleeping {
		waitTask(t, k.m, id, "working")
	}
	// Cancel half of them: three states in all.
	for _, id := range sleeping[:2] {
		if code, body := adminDo(t, k.m, http.MethodPost, "/admin/v1/tasks/"+id+"/cancel"); code != http.StatusOK {
			t.Fatalf("cancel: HTTP %d %s", code, body)
		}
	}
	var all admin.TaskList
	adminJSON(t, k.m, "/admin/v1/tasks?limit=1000", &all)
	if len(all.Tasks) != 18 || all.NextPageToken != nil || all.ScannedTasks != 18 {
		t.Fatalf("all tasks: %d, next %v, scanned %d", len(all.Tasks), all.NextPageToken, all.ScannedTasks)
	}
	if !slices.IsSortedFunc(all.Tasks, func(a, b admin.TaskSummary) int { return strings.Compare(b.ID, a.ID) }) {
		t.Error("tasks are not by id, highest first")
	}
	anon := ""
	callers := []*string{nil, &anon, ptr("acme"), ptr("bob"), ptr("nobody")}
	pages := 0
	for _, st := range []string{"", "completed", "working", "canceled", "failed"} {
		for _, fn := range []string{"", "demo::echo", "demo::sleep"} {
			for _, caller := range callers {
				var want []string
				for _, s := range all.Tasks {
					if (st == "" || string(s.State) == st) && (fn == "" || *s.Function == fn) &&
						(caller == nil || (*caller == "" && s.Caller == nil) || (s.Caller != nil && *s.Caller == *caller)) {
						want = append(want, s.ID)
					}
				}
				q := url.Values{}
				if st != "" {
					q.Set("state", st)
				}
				if fn != "" {
					q.Set("function", fn)
				}
				if caller != nil {
					q.Set("caller", *caller)
				}
				for _, limit := range []int{1, 2, 5} {
					q.Set("limit", fmt.Sprint(limit))
					q.Del("page_token")
					var got []string
					for n := 0; ; n++ {
						var page admin.TaskList
						adminJSON(t, k.m, "/admin/v1/tasks?"+q.Encode(), &page)
						pages++
						if len(page.Tasks) > limit || n > 20 {
							t.Fatalf("%s: %d tasks in page %d", q.Encode(), len(page.Tasks), n)
						}
						for _, s := range page.Tasks {
							got = append(got, s.ID)
						}
						if page.NextPageToken == nil {
							break
						}
						q.Set("page_token", *page.NextPageToken)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s (-want +got):\n%s", q.Encode(), diff)
					}
				}
			}
		}
	}
	t.Logf("%d pages", pages)
}

func ptr[T any](v T) *T { return &v }

// storeState is every key and value of every bucket of m's store, the
// hash of its file, and the id of the last transaction committed, all of
// one snapshot. The id, not the store's commit counter: the counter is
// bumped after a commit is visible, so a dump could hold a commit (the
// fixture's dead letter, say) that the counter did not count yet, and
// the count would then seem to grow under the views alone.
func storeState(tb testing.TB, m *Main) (dump string, file [32]byte, txid uint64) {
	tb.Helper()
	db := boltOf(tb, m).DB()
	lastTx := func() (id uint64) {
		if err := db.View(func(tx *bolt.Tx) error { id = uint64(tx.ID()); return nil }); err != nil {
			tb.Fatal(err)
		}
		return id
	}
	for {
		before := lastTx()
		dump, file = testkit.DumpStore(tb, db)
		if txid = lastTx(); txid == before {
			return dump, file, txid
		}
	}
}

// TestOpViewObservesOnly calls every read endpoint, and the CLI's reads,
// many times: the store file does not change by a byte, nothing is
// committed, and a working task's record (its UpdatedAt, its expiry) is
// untouched.
func TestOpViewObservesOnly(t *testing.T) {
	// The working task observed is a call that writes nothing while it
	// runs (an exec of sleep): demo::sleep notes its progress each second,
	// which a loaded machine's slower reads saw as changes. The fixture's
	// sleep is canceled before the store is first read.
	example, err := os.ReadFile(exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, sub := range []string{"schemas", "bin"} { // what the example catalogue names by relative path
		abs, err := filepath.Abs(filepath.Join(filepath.Dir(exampleCatalog), sub))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	catalog := filepath.Join(dir, "catalog.yaml")
	block := "  - id: test::block\n    metadata: {\"a2a.expose\": true, \"a2a.tier\": partner}\n    timeout: 10m\n    exec: {argv: [sleep, \"300\"]}\n"
	putFile(t, catalog, string(example)+block)
	f := newOpFixtureOf(t, catalog)
	m := f.k.m
	if code, body := adminDo(t, m, http.MethodPost, "/admin/v1/tasks/"+f.sleep+"/cancel"); code != http.StatusOK {
		t.Fatalf("cancel %s: HTTP %d %s", f.sleep, code, body)
	}
	blocked := opSend(t, f.k, f.k.bob, sendParams("m-block", "test::block", map[string]any{}, false))
	waitTask(t, m, blocked, "working")
	adminURL := "http://" + m.AdminAddr()
	// The call's process group is recorded on its task just after it
	// starts: the baseline is taken once it is there.
	var (
		dump, file, txid = storeState(t, m)
		deadline         = time.Now().Add(15 * time.Second)
	)
	for !strings.Contains(dump, "processGroup") {
		if time.Now().After(deadline) {
			t.Fatal("the exec call's process group was not recorded on its task within 15 s")
		}
		time.Sleep(20 * time.Millisecond)
		dump, file, txid = storeState(t, m)
	}
	tok := ""
	for i := range 30 {
		for _, p := range []string{
			"/admin/v1/overview", "/admin/v1/tasks", "/admin/v1/tasks?state=working", "/admin/v1/tasks?caller=bob",
			"/admin/v1/tasks?function=demo::echo&limit=1", "/admin/v1/dead-letters?limit=1",
			"/admin/v1/tasks/" + blocked, "/admin/v1/tasks/" + f.hook, "/admin/v1/tasks/no-such-task",
			"/admin/v1/tasks?limit=0", "/admin/v1/tasks?limit=1&page_token=" + tok,
		} {
			code, body := adminDo(t, m, http.MethodGet, p)
			if code == http.StatusOK && i == 0 && strings.HasPrefix(p, "/admin/v1/tasks?limit=1&") {
				var l admin.TaskList
				_ = json.Unmarshal(body, &l)
				if l.NextPageToken != nil {
					tok = *l.NextPageToken
				}
			}
		}
		if i%10 == 0 {
			for _, args := range [][]string{{"list"}, {"get", blocked}, {"list", "--state", "working", "--json"}} {
				if code, _, errOut := runA2AD(t, nil, append([]string{"tasks"}, append(args, "--server", adminURL)...)...); code != 0 {
					t.Fatalf("a2ad tasks %v: %d %s", args, code, errOut)
				}
			}
		}
	}
	dump2, file2, txid2 := storeState(t, m)
	if diff := cmp.Diff(dump, dump2); diff != "" {
		t.Errorf("the store changed (-before +after):\n%s", diff)
	}
	if file != file2 || txid != txid2 {
		t.Errorf("store file changed: %v; last transaction %d -> %d", file != file2, txid, txid2)
	}
	if !strings.Contains(dump, "working") {
		t.Error("the dump holds no working task: the test proves less than it says")
	}
}

// run runs a2ad with args (the admin listener's --server appended unless
// noServer) and records the command line, its output and exit code.
func (tr *transcript) run(env map[string]string, args ...string) (int, string, string) {
	tr.tb.Helper()
	code, out, errOut := runA2AD(tr.tb, env, args...)
	tr.note("$ a2ad " + strings.Join(quoteArgs(args), " ") + "\n")
	if out != "" {
		tr.note(out)
	}
	if errOut != "" {
		tr.note("stderr: " + errOut)
	}
	fmt.Fprintf(&tr.b, "exit %d\n\n", code)
	return code, out, errOut
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case a == "":
			out[i] = `""`
		case strings.HasPrefix(a, "http://127.0.0.1:"):
			out[i] = "$ADMIN"
		default:
			out[i] = a
		}
	}
	return out
}

// TestTasksCLI runs a2ad tasks list|get|cancel against the real server
// and pins their output, errors and exit codes.
func TestTasksCLI(t *testing.T) {
	f := newOpFixture(t)
	m := f.k.m
	adminURL := "http://" + m.AdminAddr()
	tr := newTranscript(t, m)
	for _, id := range []string{f.hook, f.echo, f.sleep, f.quick} {
		tr.n.ids.apply([]byte(id))
	}
	tr.run(nil, "tasks", "list", "--server", adminURL)
	_, out, _ := tr.run(nil, "tasks", "list", "--caller", "acme", "--limit", "1", "--server", adminURL)
	tok := regexp.MustCompile(`--page-token (\S+)`).FindStringSubmatch(out)
	if tok == nil {
		t.Fatalf("no page token in %q", out)
	}
	tr.run(nil, "tasks", "list", "--caller", "acme", "--limit", "1", "--page-token", tok[1], "--server", adminURL)
	tr.run(nil, "tasks", "list", "--caller", "", "--server", adminURL)
	tr.run(map[string]string{"A2AD_ADMIN_URL": adminURL}, "tasks", "list", "--state", "working", "--function", "demo::sleep")
	tr.run(nil, "tasks", "list", "--function", "nope", "--server", adminURL)
	tr.run(nil, "tasks", "get", f.hook, "--server", adminURL)
	tr.run(nil, "tasks", "cancel", f.sleep, "--server", adminURL)
	tr.run(nil, "tasks", "get", "--server", adminURL, f.sleep)
	tr.run(nil, "tasks", "cancel", f.sleep, "--server", adminURL)
	tr.run(nil, "tasks", "get", "no-such-task", "--server", adminURL)
	tr.run(nil, "tasks", "list", "--state", "done", "--server", adminURL)
	tr.run(nil, "tasks", "list", "--limit", "0", "--server", adminURL)
	tr.run(nil, "tasks", "list", "--page-token", "xyz", "--server", adminURL)
	tr.run(nil, "tasks", "list", "working", "--server", adminURL)
	tr.run(nil, "tasks", "get", "--server", adminURL)
	tr.run(nil, "tasks", "get", "a", "b", "--server", adminURL)
	tr.run(nil, "tasks", "cancel", "--json", "x", "--server", adminURL)
	tr.run(nil, "tasks", "list", "--server", "ftp://x")
	tr.run(nil, "tasks", "bogus")
	tr.golden("opview-cli")

	// --json prints the endpoint's JSON.
	for _, tt := range []struct {
		args []string
		path string
	}{
		{[]string{"list", "--caller", "acme", "--json"}, "/admin/v1/tasks?caller=acme"},
		{[]string{"get", "--json", f.hook}, "/admin/v1/tasks/" + f.hook},
		{[]string{"get", f.hook, "--json"}, "/admin/v1/tasks/" + f.hook},
	} {
		code, out, errOut := runA2AD(t, nil, append(append([]string{"tasks"}, tt.args...), "--server", adminURL)...)
		_, body := adminDo(t, m, http.MethodGet, tt.path)
		var want bytes.Buffer
		_ = json.Indent(&want, bytes.TrimSpace(body), "", "  ")
		if code != 0 || out != want.String()+"\n" {
			t.Errorf("a2ad tasks %v = %d, %q\n%s\nwant\n%s", tt.args, code, errOut, out, want.String())
		}
	}

	// Usage, and a server that is not there.
	if code, out, _ := runA2AD(t, nil, "tasks", "help"); code != 0 || !strings.Contains(out, "a2ad tasks list [--state S]") {
		t.Errorf("a2ad tasks help = %d %q", code, out)
	}
	if code, _, errOut := runA2AD(t, nil, "tasks"); code != 2 || !strings.Contains(errOut, "Usage:") {
		t.Errorf("a2ad tasks = %d %q", code, errOut)
	}
	code, _, errOut := runA2AD(t, nil, "tasks", "list", "--server", "http://127.0.0.1:1")
	if code != 1 || !strings.HasPrefix(errOut, "a2ad: tasks list: cannot reach the admin listener at http://127.0.0.1:1: ") {
		t.Errorf("unreachable server: %d %q", code, errOut)
	}
}
