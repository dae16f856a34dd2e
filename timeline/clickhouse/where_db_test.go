package clickhouse_test

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// stagedBatches are requests whose stages come in separate commits, after
// the filter fixture: the server holds a row per commit until it merges
// them, and a filter must see only the merged row (the latest stage's code,
// latency and message), never an older one.
func stagedBatches() [][]timeline.Record {
	t0 := timelinetest.WhereT0.Add(20 * time.Minute)
	line := int64(1000)
	req := func(id string, dt time.Duration, st timeline.Stage, code int, lat time.Duration, msg string) timeline.Record {
		line++
		return timeline.Record{Key: "staged\x00" + id, AuditID: id, Time: t0.Add(dt), Source: timeline.SourceAudit,
			Object: timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "staged", Name: id}, Verb: "get",
			User: "carol", Code: code, Latency: lat, Stages: st, Message: msg, Evidence: timeline.Evidence{Line: line}}
	}
	received, started, complete := timeline.StageRequestReceived, timeline.StageResponseStarted, timeline.StageResponseComplete
	return [][]timeline.Record{
		{
			req("staged-500", 0, received, 0, 0, ""),
			req("staged-200", time.Second, received, 0, 0, ""),
			req("staged-open", 2*time.Second, received, 0, 0, ""),
		},
		{
			req("staged-500", 0, complete, 500, 3*time.Second, "etcdserver: request timed out"),
			req("staged-200", time.Second, started, 200, time.Second, "started"),
		},
		{
			req("staged-200", time.Second, complete, 200, 2*time.Second, ""),
		},
	}
}

// openWhereStore opens a database of its own on the test cluster holding
// the filter fixture (timelinetest.AddWhereRecords), then stagedBatches.
func openWhereStore(tb testing.TB) *clickhouse.Store {
	tb.Helper()
	s := clickhousetest.New(tb)
	if err := s.StopMerges(context.Background()); err != nil {
		tb.Fatal(err)
	}
	timelinetest.AddWhereRecords(tb, s)
	for _, recs := range stagedBatches() {
		timelinetest.AddRecords(tb, s, recs...)
	}
	return s
}

// ids returns the IDs of records, in order.
func ids(rs []*timeline.Record) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// checkAgainstCEL asserts that the store yields, for f, the IDs of exactly
// the records of all (every record, as the store reads them) on which
// Filter.Match is true, in order.
func checkAgainstCEL(tb testing.TB, s *clickhouse.Store, all []*timeline.Record, f *timeline.Filter) {
	tb.Helper()
	var want, got []int64
	for _, r := range all {
		if ok, _ := f.Match(r); ok {
			want = append(want, r.ID)
		}
	}
	for r, err := range s.Records(context.Background(), timeline.Query{Where: f}) {
		if err != nil {
			sql, complete := clickhouse.CompileWhere(f.Expr())
			tb.Fatalf("%s\nSQL: %s\ncomplete: %v\n%v", f, sql, complete, err)
		}
		got = append(got, r.ID)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		sql, complete := clickhouse.CompileWhere(f.Expr())
		tb.Errorf("%s\nSQL: %s\ncomplete: %v\nrecord ids (-CEL +store):\n%s", f, sql, complete, diff)
	}
}

// chResidual are the timelinetest.WhereCases that this store translates
// only in part: annotations and size() have no exact SQL. (stage has one
// here: the stages column.)
var chResidual = map[string]bool{
	`annotations["authorization.k8s.io/decision"] == "forbid"`:    true,
	`user == "alice" && (annotations["x"] == "y" || code == 404)`: true,
	`size(name) == 6 && ns == "default"`:                          true,
}

func TestWhereCases(t *testing.T) {
	s := openWhereStore(t)
	all := timelinetest.ReadAll(t, s)
	seen := 0
	for _, tt := range timelinetest.WhereCases() {
		if chResidual[tt.Expr] {
			seen++
		}
		t.Run(tt.Expr, func(t *testing.T) {
			f := timelinetest.MustFilter(t, tt.Expr)
			if _, complete := clickhouse.CompileWhere(f.Expr()); complete == chResidual[tt.Expr] {
				t.Errorf("complete = %v, want %v", complete, !chResidual[tt.Expr])
			}
			var got []string
			for _, l := range timelinetest.Labels(t, s, timeline.Query{Where: f}) {
				if !strings.HasPrefix(l, "staged-") { // not in WhereRecords, which the cases speak of
					got = append(got, l)
				}
			}
			sorted := cmpopts.SortSlices(func(a, b string) bool { return a < b })
			if diff := cmp.Diff(tt.Want, got, sorted, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("records (-want +got)\n%s", diff)
			}
			checkAgainstCEL(t, s, all, f)
		})
	}
	if seen != len(chResidual) {
		t.Errorf("%d of the %d chResidual are WhereCases", seen, len(chResidual))
	}
}

// stagedExprs test the merged rows of stagedBatches.
var stagedExprs = []string{
	`auditID.startsWith("staged") && code == 0`, `auditID.startsWith("staged") && stage == "RequestReceived"`,
	`auditID.startsWith("staged") && latency < duration("2s")`, `message == "started"`,
	`ns == "staged" && stage == "ResponseStarted"`,
	`ns == "staged" && !(code in [0, 500])`, `stage > "Q" && user == "carol"`,
}

func TestWhereReadsMergedRows(t *testing.T) {
	s := openWhereStore(t)
	all := timelinetest.ReadAll(t, s)
	// Merges are stopped: the older versions are all still there.
	if n, err := s.CountRows(context.Background()); err != nil || n <= uint64(len(all)) {
		t.Fatalf("the record table holds %d rows (%v), want more than the %d records: no older versions to leave out", n, err, len(all))
	}
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{stagedExprs[0], []string{"staged-open"}},
		{stagedExprs[1], []string{"staged-open"}},
		{stagedExprs[2], []string{"staged-open"}},
		{stagedExprs[3], nil},
		{stagedExprs[4], nil},
		{stagedExprs[5], []string{"staged-200"}},
		{stagedExprs[6], []string{"staged-500", "staged-200", "staged-open"}},
	} {
		f := timelinetest.MustFilter(t, tc.expr)
		if diff := cmp.Diff(tc.want, timelinetest.Labels(t, s, timeline.Query{Where: f}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tc.expr, diff)
		}
		checkAgainstCEL(t, s, all, f)
	}
}

func TestWhereMatchesCEL(t *testing.T) {
	s := openWhereStore(t)
	all := timelinetest.ReadAll(t, s)
	if want := len(timelinetest.WhereRecords()) + 3; len(all) != want {
		t.Fatalf("read %d records, want %d", len(all), want)
	}
	for _, expr := range timelinetest.WhereExprs {
		checkAgainstCEL(t, s, all, timelinetest.MustFilter(t, expr))
	}
}

func TestWhereRandomFilters(t *testing.T) {
	s := openWhereStore(t)
	all := timelinetest.ReadAll(t, s)
	n := 500
	if testing.Short() {
		n = 100
	}
	timelinetest.RandomFilters(t, n, func(f *timeline.Filter) { checkAgainstCEL(t, s, all, f) })
}

// FuzzWhereMatchesCEL checks, for any filter CEL accepts, that the store
// yields the IDs of exactly the records on which Filter.Match is true. The
// records are stored once per fuzzing process, in a database of its own.
func FuzzWhereMatchesCEL(f *testing.F) {
	s := openWhereStore(f)
	all := timelinetest.ReadAll(f, s)
	timelinetest.FuzzFilters(f, func(t *testing.T, flt *timeline.Filter) { checkAgainstCEL(t, s, all, flt) }, stagedExprs...)
}

// TestWhereLimitsOnServer: filters at the bounds of what compileWhere
// writes run on the server (max_query_size, max_ast_elements,
// max_ast_depth), and filters past them are answered through CEL.
func TestWhereLimitsOnServer(t *testing.T) {
	s := openWhereStore(t)
	all := timelinetest.ReadAll(t, s)
	deep := `user == "alice"`
	for range 100 {
		deep = "!(" + deep + ")"
	}
	long := `"` + strings.Repeat("é", 12000) + `"` // 96,000 bytes of SQL, 12,000 code points of CEL
	for _, tc := range []struct {
		expr     string
		complete bool
	}{
		{deep, true},
		{"!(" + deep + ")", false},
		{"code in [" + strings.Repeat("1, ", 19990) + "200]", true},
		{"code in [" + strings.Repeat("1, ", 30000) + "200]", false},
		{"code == 200 ? " + strings.Repeat(`(verb == "get" || `, 95) + "false" + strings.Repeat(")", 95) + " : false", true},
		{"message == " + long + " || code == 404", true},
		{"message == " + long + " || user == " + long + " || code == 404", false},
		{"message != " + long + " && user != " + long + " && code == 404", false},
		{"verb in [" + strings.Repeat(`"ÿ", `, 7000) + `"get"]`, true},
		{"verb in [" + strings.Repeat(`"ÿÿ", `, 7000) + `"get"]`, false},
	} {
		f := timelinetest.MustFilter(t, tc.expr)
		if sql, complete := clickhouse.CompileWhere(f.Expr()); complete != tc.complete {
			t.Errorf("%.60s...: complete = %v (%d bytes of SQL), want %v", tc.expr, complete, len(sql), tc.complete)
		}
		checkAgainstCEL(t, s, all, f)
	}
	// The largest key set named, with the longest filter: every record
	// but one is bad, and ids no record has fill the set.
	bad := map[int64]bool{}
	for _, r := range all[1:] {
		bad[r.ID] = true
	}
	for i := int64(0); len(bad) < 4096; i++ {
		bad[1<<62+i] = true
	}
	f := timelinetest.MustFilter(t, "bad && message != "+long+" && code in ["+strings.Repeat("1, ", 2000)+"200]")
	var want []string
	for _, r := range all {
		c := *r
		c.Bad = bad[r.ID]
		if ok, _ := f.Match(&c); ok {
			want = append(want, r.AuditID)
		}
	}
	if diff := cmp.Diff(want, timelinetest.Labels(t, s, timeline.Query{Where: f, Bad: bad})); diff != "" {
		t.Errorf("bad && a long filter (-CEL +store)\n%s", diff)
	}
}

// TestWhereLimit: a limited query yields the first matches in its order,
// whether the server applies the limit or Records does.
func TestWhereLimit(t *testing.T) {
	s := openWhereStore(t)
	all := timelinetest.ReadAll(t, s)
	for _, expr := range []string{`code >= 200 && stage != "Panic"`, `code >= 200 && !("y" in annotations)`} {
		f := timelinetest.MustFilter(t, expr)
		matches := timelinetest.CELLabels(all, f)
		for _, desc := range []bool{false, true} {
			if desc {
				matches = slices.Clone(matches)
				slices.Reverse(matches)
			}
			for _, n := range []int{1, 2, 5} {
				got := timelinetest.Labels(t, s, timeline.Query{Where: f, Limit: n, Desc: desc})
				if diff := cmp.Diff(matches[:n], got); diff != "" {
					t.Errorf("%s, limit %d, desc %v (-want +got)\n%s", expr, n, desc, diff)
				}
			}
		}
	}
}

func TestHistogramAgreesWithCEL(t *testing.T) {
	s := openWhereStore(t)
	timelinetest.CheckHistogram(t, s, timelinetest.ReadAll(t, s))
}

func TestBadKeySet(t *testing.T) {
	s := openWhereStore(t)
	timelinetest.CheckBadKeySet(t, s, timelinetest.ReadAll(t, s))
}

func TestFields(t *testing.T) {
	s := openWhereStore(t)
	timelinetest.CheckFields(t, s, timelinetest.ReadAll(t, s))
}

// TestPodField: timelinetest.CheckPodField, on the server's reading of
// extra for the pod alone (podExtraSQL).
func TestPodField(t *testing.T) {
	timelinetest.CheckPodField(t, clickhousetest.New(t))
}

// TestStringOrderOnServer compares every ordering of the short strings of
// the bytes 0, 1, 'a' and 0xff, as the server answers it (compareSQL) over
// a column and a literal, and over two columns, with Go's order, which is
// CEL's.
func TestStringOrderOnServer(t *testing.T) {
	ctx := context.Background()
	s := clickhousetest.New(t)
	alphabet := []byte{0, 1, 'a', 0xff}
	strs := []string{""}
	for _, a := range alphabet {
		strs = append(strs, string([]byte{a}))
		for _, b := range alphabet {
			strs = append(strs, string([]byte{a, b}))
		}
	}
	lits := make([]string, len(strs))
	for i, x := range strs {
		lits[i] = clickhouse.Quote(x)
	}
	column := "arrayJoin([" + strings.Join(lits, ", ") + "])"
	for _, op := range []string{"=", "!=", "<", "<=", ">", ">="} {
		for j, y := range strs {
			// A row a string x, in the order of strs: x op y as 0 or 1,
			// y a literal, then y a column.
			answers := func(y string) string {
				return "arrayStringConcat(groupArray(toString(" + clickhouse.CompareStrings("x", op, y) + ")), '')"
			}
			got, err := s.QueryString(ctx, "SELECT concat("+answers(lits[j])+", ' ', "+answers("y")+
				") FROM (SELECT "+column+" AS x, materialize("+lits[j]+") AS y)")
			if err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			for _, x := range strs {
				want.WriteString(map[bool]string{true: "1", false: "0"}[holds(op, strings.Compare(x, y))])
			}
			if w := want.String() + " " + want.String(); got != w {
				t.Errorf("x %s %q, x in %q: server %s, Go %s", op, y, strs, got, w)
			}
		}
	}
}

// holds reports whether op holds between operands that compare as cmp.
func holds(op string, cmp int) bool {
	return map[string]bool{"=": cmp == 0, "!=": cmp != 0, "<": cmp < 0, "<=": cmp <= 0, ">": cmp > 0, ">=": cmp >= 0}[op]
}

// quoteSeeds are strings whose literals are easy to get wrong.
var quoteSeeds = []string{"", "'", `\`, `\'`, `''`, "\x00", "a\x00b", "\xff\xfe", "é", "日本", `\x41`, `\0`, "?", "$1",
	"{x:String}", "\n\r\t\b\f\v", "\x1b[0m", "%_*"}

// TestQuoteRoundTrip: the server reads every literal quote writes as the
// bytes quoted, every byte value among them.
func TestQuoteRoundTrip(t *testing.T) {
	s := clickhousetest.New(t)
	var every []byte
	for b := range 256 {
		every = append(every, byte(b))
	}
	for _, in := range append(quoteSeeds, string(every)) {
		checkQuote(t, s, in)
	}
}

func checkQuote(t *testing.T, s *clickhouse.Store, in string) {
	t.Helper()
	lit := clickhouse.Quote(in)
	got, err := s.QueryString(context.Background(), "SELECT hex("+lit+")")
	if err != nil {
		t.Fatalf("quote(%q) = %s: %v", in, lit, err)
	}
	if want := strings.ToUpper(hex.EncodeToString([]byte(in))); got != want {
		t.Errorf("quote(%q) = %s, which the server reads as %s, want %s", in, lit, got, want)
	}
}

func FuzzQuoteRoundTrip(f *testing.F) {
	for _, in := range quoteSeeds {
		f.Add(in)
	}
	s := clickhousetest.New(f)
	f.Fuzz(func(t *testing.T, in string) {
		checkQuote(t, s, in)
	})
}
