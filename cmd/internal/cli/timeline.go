package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

type timelineOptions struct {
	f      *Factory
	since  string
	until  string
	where  string
	output string
	limit  int
	desc   bool

	sinceData bool
	scope     scopeFlags
}

func newTimelineCmd(f *Factory) *cobra.Command {
	opts := &timelineOptions{f: f}
	cmd := &cobra.Command{
		Use:   "timeline",
		Short: "List the records of the timeline, filtered with CEL",
		Long: `List records in time order. --since and --until take an RFC 3339 time or a
duration (90m, 1d, 2d12h) counted back from now, as kubectl logs --since
does; with --since-data, from the end of the data (the last record held), so
"--since 30m --since-data" is the last half hour of the incident, whenever it
was ("-30m" means the same). When the data ends before --since, a note says
so. A time past the end of what a timeline holds (2262) selects nothing.

-n NS keeps the records of objects in namespace NS (ns == "NS" in --where);
cluster-scoped objects (nodes) and requests without an object drop out.

--where takes a CEL expression (the language of ValidatingAdmissionPolicy)
over these record fields:
` + fieldHelp() + `
Comparisons, in, &&, ||, !, startsWith, endsWith and contains run inside
SQLite; anything else (matches, annotations, stage) is evaluated row by row.

Beside the stored records, timeline lists the object states the outcome
classifier reads from object versions (pods Failed, OOMKilled,
CrashLoopBackOff; nodes NotReady; jobs Failed; and Running, Ready,
Succeeded), as records of source "status", one per change of state. The
field bad is the classifier's verdict, the same one investigate, bisect
and the TUI use (docs/investigate.md, "What counts as bad"): --where 'bad'
lists exactly the bad observations; -o wide shows it as the BAD column.`,
		Example: `  # LIST calls that failed on the server side, from kubelets
  faultline timeline --where 'verb == "list" && code >= 500 && user.startsWith("system:node:")'

  # Throttled requests in the last 10 minutes of the data, newest first
  faultline timeline --since 10m --since-data --where 'code == 429' --desc

  # Everything of the last day in one namespace, without the header row
  faultline timeline --since 1d -n vision-train --no-headers

  # Slow writes to one namespace, as JSON Lines for jq
  faultline timeline --where 'ns == "vision-train" && verb in ["create","update","patch"] && latency > duration("1s")' -o jsonl

  # What the investigation counts as bad, failed object states included
  faultline timeline --where 'bad' -o wide
  faultline timeline --where 'source == "status" && reason == "OOMKilled"'

  # Between two instants
  faultline timeline --since 2026-05-01T10:00:00Z --until 2026-05-01T10:05:00Z`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return timelineRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.since, "since", "", "start: RFC 3339 time, or a duration back from now (90m, 1d)")
	cmd.Flags().StringVar(&opts.until, "until", "", "end (exclusive): RFC 3339 time, or a duration back from now")
	addSinceData(cmd.Flags(), &opts.sinceData)
	cmd.Flags().StringVar(&opts.where, "where", "", "CEL filter over record fields (see above)")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "table", "output format: table, wide, json, jsonl or yaml")
	opts.scope.add(cmd.Flags(), "records of objects")
	addNoHeaders(cmd, f)
	cmd.Flags().IntVar(&opts.limit, "limit", 0, "print at most this many records (0: all)")
	cmd.Flags().BoolVar(&opts.desc, "desc", false, "newest first")
	return cmd
}

func fieldHelp() string {
	var b strings.Builder
	for _, fl := range timeline.Fields {
		typ := fl.Type.String()
		switch typ {
		case "google.protobuf.Timestamp":
			typ = "timestamp"
		case "google.protobuf.Duration":
			typ = "duration"
		case "map(string, string)":
			typ = "map"
		}
		fmt.Fprintf(&b, "  %-12s %-10s %s\n", fl.Name, typ, fl.Doc)
	}
	return b.String()
}

func timelineRun(ctx context.Context, opts *timelineOptions) error {
	if err := checkOutput(opts.output, "table", "wide", "json", "jsonl", "yaml"); err != nil {
		return err
	}
	q := timeline.Query{Limit: opts.limit, Desc: opts.desc}
	if where := opts.scope.scoped(opts.where); where != "" {
		flt, err := timeline.CompileFilter(where)
		if err != nil {
			return usagef(`faultline timeline --where 'verb == "list" && code >= 500'`, "--where: %v", err)
		}
		q.Where = flt
	}
	store, err := opts.f.OpenStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	if opts.since != "" || opts.until != "" {
		_, last, err := store.Bounds(ctx)
		if err != nil {
			return err
		}
		win := windowFlags{since: opts.since, until: opts.until, fromData: opts.sinceData}
		if q.Since, q.Until, err = win.resolve(ctx, opts.f, store); err != nil {
			return err
		}
		// "--until 0s --since-data" should include the last record itself.
		if opts.until != "" && !q.Until.IsZero() && q.Until.Equal(last) {
			q.Until = last.Add(1)
		}
	}
	// The classifier's search of every record in the span is needed only
	// when the filter asks for bad ones; otherwise each record shown is
	// judged on its own by the same expression, which costs what is shown
	// (on 10 M records, 7 s against 0.2 s for the first page).
	full := q.Where != nil && q.Where.Uses("bad")
	out, err := outcome.Read(ctx, store, outcome.Options{Since: q.Since, Until: q.Until, StatesOnly: !full})
	if err != nil {
		return err
	}
	if full {
		q.Bad = out.BadRecordIDs()
	}
	p := newRecordPrinter(opts.f.IO.Out, opts.output)
	p.noHeaders = opts.f.noHeaders
	p.partial = opts.f.partialShards()
	for r, err := range withStates(ctx, store, q, out.States) {
		if err != nil {
			return err
		}
		if !full && r.Source != outcome.SourceStatus {
			r.Bad, _ = out.IsBad(r) // a run-time failure counts as not bad
		}
		if err := p.print(r); err != nil {
			return err
		}
	}
	if q.Where != nil {
		if err := q.Where.RuntimeError(); err != nil {
			fmt.Fprintf(opts.f.IO.ErrOut, "warning: --where %v\n", err)
		}
	}
	if p.n == 0 && (opts.output == "table" || opts.output == "wide") {
		fmt.Fprintln(opts.f.IO.ErrOut, "No records match.") // stdout stays empty for pipes
	}
	return p.close()
}

// recordJSON is the stable JSON form of a record.
type recordJSON struct {
	ID         int64              `json:"id"`
	Time       string             `json:"time"`
	Source     string             `json:"source"`
	Verb       string             `json:"verb,omitempty"`
	Reason     string             `json:"reason,omitempty"`
	Code       int                `json:"code,omitempty"`
	LatencyMs  float64            `json:"latencyMs,omitempty"`
	User       string             `json:"user,omitempty"`
	UserAgent  string             `json:"userAgent,omitempty"`
	SourceIP   string             `json:"sourceIP,omitempty"`
	Object     timeline.ObjectRef `json:"object"`
	Type       string             `json:"type,omitempty"`
	Level      string             `json:"level,omitempty"`
	Stage      string             `json:"stage,omitempty"`
	AuditID    string             `json:"auditID,omitempty"`
	RequestURI string             `json:"requestURI,omitempty"`
	Message    string             `json:"message,omitempty"`
	Extra      json.RawMessage    `json:"extra,omitempty"`
	Evidence   timeline.Evidence  `json:"evidence"`
	Bad        bool               `json:"bad"`
}

func toJSON(r *timeline.Record) recordJSON {
	return recordJSON{
		ID: r.ID, Time: r.Time.UTC().Format(time.RFC3339Nano), Source: string(r.Source), Verb: r.Verb,
		Reason: r.Reason, Code: r.Code, LatencyMs: float64(r.Latency.Microseconds()) / 1000, User: r.User,
		UserAgent: r.UserAgent, SourceIP: r.SourceIP, Object: r.Object, Type: r.Type, Level: r.Level,
		Stage: r.Stage(), AuditID: r.AuditID, RequestURI: r.URI, Message: r.Message, Extra: r.Extra,
		Evidence: r.Evidence, Bad: r.Bad,
	}
}

type recordPrinter struct {
	w      io.Writer
	format string
	tw     *tabwriter.Writer
	enc    *json.Encoder
	n      int

	noHeaders bool
	partial   []partialShard // the shards the answer leaves out: marked after the records
}

func newRecordPrinter(w io.Writer, format string) *recordPrinter {
	p := &recordPrinter{w: w, format: format}
	switch format {
	case "table", "wide":
		p.tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	case "json", "jsonl", "yaml":
		p.w = termsafe.Raw(w) // JSON and YAML escape control characters themselves
		p.enc = json.NewEncoder(p.w)
		p.enc.SetEscapeHTML(false)
	}
	return p
}

// flushEvery bounds how many table rows are buffered to align columns.
const flushEvery = 1000

func (p *recordPrinter) print(r *timeline.Record) error {
	defer func() { p.n++ }()
	switch p.format {
	case "jsonl":
		return p.enc.Encode(toJSON(r))
	case "yaml":
		// A list of records, one item each, so the output streams.
		b, err := toYAML(toJSON(r))
		if err != nil {
			return err
		}
		item := "- " + strings.ReplaceAll(strings.TrimSuffix(string(b), "\n"), "\n", "\n  ") + "\n"
		if p.n == 0 {
			item = listStart(p.format, len(p.partial) > 0) + item
		}
		_, err = io.WriteString(p.w, item)
		return err
	case "json":
		sep := ",\n"
		if p.n == 0 {
			sep = listStart(p.format, len(p.partial) > 0)
		}
		if _, err := io.WriteString(p.w, sep); err != nil {
			return err
		}
		b, err := json.Marshal(toJSON(r))
		if err != nil {
			return err
		}
		_, err = p.w.Write(b)
		return err
	}
	if p.n == 0 && !p.noHeaders {
		hdr := "TIME\tSOURCE\tVERB/REASON\tCODE\tLATENCY\tUSER\tOBJECT"
		if p.format == "wide" {
			hdr += "\tBAD\tUSER-AGENT\tSTAGE\tAUDIT-ID\tEVIDENCE"
		}
		fmt.Fprintln(p.tw, hdr)
	}
	action := r.Verb
	if action == "" {
		action = r.Reason
	}
	code := "-"
	if r.Code != 0 {
		code = fmt.Sprint(r.Code)
	} else if r.Type != "" {
		code = r.Type
	}
	lat := "-"
	if r.Latency > 0 {
		lat = formatLatency(r.Latency)
	}
	termsafe.Fprintf(p.tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s", r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), r.Source,
		dash(action), code, lat, dash(r.User), objectString(r))
	if p.format == "wide" {
		bad := "-"
		if r.Bad {
			bad = "bad"
		}
		termsafe.Fprintf(p.tw, "\t%s\t%s\t%s\t%s\trun %d line %d", bad, dash(r.UserAgent), dash(r.Stage()), dash(r.AuditID),
			r.Evidence.Run, r.Evidence.Line)
	}
	fmt.Fprintln(p.tw)
	if (p.n+1)%flushEvery == 0 {
		return p.tw.Flush()
	}
	return nil
}

// close ends the output: the end of a list of JSON or YAML records, and
// the mark of a partial answer (listEnd); or the table's last rows.
func (p *recordPrinter) close() error {
	if p.format == "table" || p.format == "wide" {
		return p.tw.Flush() // a partial answer's warning is on stderr
	}
	end, err := listEnd(p.format, p.n, p.partial)
	if err == nil {
		_, err = io.WriteString(p.w, end)
	}
	return err
}

func formatLatency(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%dµs", d.Microseconds())
}

// objectString renders resource[/subresource] ns/name, or the request URI.
func objectString(r *timeline.Record) string {
	o := r.Object
	if o.Resource == "" {
		if r.URI != "" {
			return r.URI
		}
		return "-"
	}
	res := o.Resource
	if o.Group != "" {
		res += "." + o.Group
	}
	if o.Subresource != "" {
		res += "/" + o.Subresource
	}
	switch {
	case o.Namespace != "" && o.Name != "":
		return res + " " + o.Namespace + "/" + o.Name
	case o.Name != "":
		return res + " " + o.Name
	case o.Namespace != "":
		return res + " -n " + o.Namespace
	}
	return res
}
