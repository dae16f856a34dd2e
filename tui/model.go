package tui

import (
	"context"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/faultline/faultline/analyze/bisect"
	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// screen is one of the five views.
type screen int

const (
	screenTimeline screen = iota
	screenDiff
	screenSlice
	screenControlPlane
	screenBisect
	screenCount
)

var screenNames = [screenCount]string{"1 Timeline", "2 Diff", "3 Slice", "4 Control plane", "5 Bisect"}

// Model is the TUI's state. Update routes messages; View draws it; all
// I/O happens in the tea.Cmds of commands.go.
type Model struct {
	ctx   context.Context
	store Store
	// heavy lets one whole-timeline analysis run at a time: on a 10 M-record
	// timeline each holds a few hundred MiB while it runs.
	heavy  *sync.Mutex
	opt    Options
	keys   KeyMap
	styles Styles
	help   help.Model
	spin   spinner.Model
	input  textinput.Model

	width, height int
	screen        screen
	showHelp      bool
	helpOff       int // first line of the help shown
	filtering     bool
	filterErr     string

	bad, where *timeline.Filter
	badWhere   *timeline.Filter // where && bad: the bad records counted
	first      time.Time        // of the evidence
	last       time.Time
	since      time.Time // the span the histogram shows
	until      time.Time

	buckets   []timeline.Bucket
	loaded    int // buckets whose records are counted
	badLoaded int // buckets whose bad records are counted
	cursor    int

	rows   []*timeline.Record
	rowSel int
	// anchor is the first row shown: rows are fetched from it on, a
	// screenful at a time.
	anchor *timeline.Record

	rep      *investigate.Report
	cp       *controlplane.Report
	session  *timeline.BisectSession
	diffSel  int
	expanded map[int]bool
	cpSel    int
	sliceOff int // first line of the slice screen shown
	// cpBursts: the control plane's arrow keys move in the bursts (else
	// in the classes).
	cpBursts bool
	burstSel int

	// detail is the record opened with enter, over every screen; nil when
	// none is open.
	detail *detail

	// bisectVersions are the object versions changed inside the bisect
	// window (the bisect screen's list); bisectSel its selected row.
	bisectVersions []timeline.ObjectVersion
	bisectMore     bool // the list was cut at bisectMaxVersions
	bisectSel      int

	ops    map[opKind]*op // under way, by kind
	nextOp int
	status string
	errMsg string

	// states are the bad object states the outcome classifier read (not
	// stored records), read once: the histogram counts them beside the bad
	// records, as investigate, bisect and timeline --where 'bad' do.
	states *badStates
}

// op is a query under way: its id (later results of an older op of the same
// kind are dropped) and how to cancel it.
type op struct {
	id     int
	cancel context.CancelFunc
	what   string
}

type opKind int

const (
	opBounds opKind = iota
	opHistogram
	opRows
	opInvestigate
	opControlPlane
	opMark
	opExport
	opDetail
	opBisect
)

// New returns the model over a store. The first frame draws at once; the
// histogram, the records and the analyses arrive as their queries end.
func New(ctx context.Context, store Store, opt Options) *Model {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.ExportDir == "" {
		opt.ExportDir = "."
	}
	r := lipgloss.DefaultRenderer()
	m := &Model{ctx: ctx, store: store, opt: opt, keys: DefaultKeys(), styles: NewStyles(r, opt.NoColor),
		help: help.New(), spin: spinner.New(spinner.WithSpinner(spinner.Line)), input: textinput.New(),
		width: 80, height: 24, expanded: map[int]bool{}, cpBursts: true, ops: map[opKind]*op{}, heavy: &sync.Mutex{}}
	m.states = &badStates{}
	m.input.Prompt = "/"
	m.input.Cursor.SetMode(cursor.CursorStatic) // no blink: a frame only when something changes
	m.input.Placeholder = `CEL over records, e.g. code >= 500 && verb == "list" (enter: apply, esc: back)`
	bad := opt.Bad
	if bad == "" {
		bad = outcome.DefaultBad
	}
	f, err := timeline.CompileFilter(bad)
	if err != nil {
		m.errMsg = "--bad: " + err.Error()
	} else {
		m.bad, m.badWhere = f, f
	}
	return m
}

// Init starts the first queries: the bounds (then the histogram), the
// bisect session, and the analyses in the background.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.spin.Tick, m.start(opBounds, "reading the timeline's bounds", m.boundsCmd),
		m.start(opMark, "reading bisect marks", m.sessionCmd),
		m.start(opInvestigate, "investigating", m.investigateCmd), m.start(opControlPlane, "analysing the control plane", m.controlPlaneCmd))
}

// start registers an op of a kind, cancelling the one under way, and
// returns its command.
func (m *Model) start(kind opKind, what string, cmd func(ctx context.Context, id int) tea.Cmd) tea.Cmd {
	if old := m.ops[kind]; old != nil {
		old.cancel()
	}
	m.nextOp++
	ctx, cancel := context.WithCancel(m.ctx)
	m.ops[kind] = &op{id: m.nextOp, cancel: cancel, what: what}
	return cmd(ctx, m.nextOp)
}

// finish reports whether a result is that of the op under way of its kind,
// and forgets the op.
func (m *Model) finish(kind opKind, id int) bool {
	o := m.ops[kind]
	if o == nil || o.id != id {
		return false
	}
	o.cancel()
	delete(m.ops, kind)
	return true
}

// busy says what runs, for the status line.
func (m *Model) busy() string {
	for k := opBounds; k <= opBisect; k++ {
		if o := m.ops[k]; o != nil {
			return o.what
		}
	}
	return ""
}

// cancelAll cancels every query under way (Esc).
func (m *Model) cancelAll() {
	for k, o := range m.ops {
		o.cancel()
		delete(m.ops, k)
	}
}

// window is the span the investigation looks at: the bisect marks narrow
// it (after the last good, up to the first bad).
func (m *Model) window() (since, until time.Time) {
	if m.session == nil {
		return time.Time{}, time.Time{}
	}
	return bisect.Bounds(m.session.Marks)
}
