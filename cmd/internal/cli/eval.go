package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline/clickhouse"
	"github.com/faultline/faultline/timeline/redact"
)

type evalOptions struct {
	f      *Factory
	dirs   []string
	split  string
	jobs   int
	output string
	min    float64
	minSet bool
}

func newEvalCmd(f *Factory) *cobra.Command {
	opts := &evalOptions{f: f}
	cmd := &cobra.Command{
		Use:   "eval DIR...",
		Short: "Score the analyzers on recorded incidents against their ground truth",
		Long: `Replay each recorded incident into a fresh temporary timeline (as faultline
replay does), investigate it, and score the findings against its
expected.json with strict rules, one check each (fixtures/README.md):

  firstBad        the earliest bad instant, in [true last good, true first bad + tolerance]
  change1         the #1 suspect is an injected change (a decoy at #1 fails)
  changeTop3      every injected change is among the top 3 suspects
  slice           the slice is named by the truth's dimensions or a listed equivalent
  counterexample  stayed good, from the population, outside the slice, differs causally
  actor           the suspect that is the change names who made it
  mitigation      each expected action, on the truth's target or an equivalent one
  episodes        the further episodes of overlapping faults
  control         (quiet controls, judged on it alone) no confident cause

A check the ground truth gives nothing to judge is left out (shown as -).
faultline replay NAME --check applies the same rules to one incident, field
by field, and also judges boundary.lastGood and the extra.* facts.

With --store DSN (a ClickHouse cluster), each incident is replayed into a
database of its own on that cluster, named faultline_eval_ and 12 random
hex digits, and the database is dropped on every shard afterwards, also
when the incident fails or eval is interrupted. The scores are the same as
on the temporary SQLite files of the default. A database that cannot be
dropped (a shard down) is named in a warning, to drop by hand.

DIR is an incident folder (one that holds expected.json) or a folder of them,
searched recursively; incidents are taken in path order. An incident of seed
100 or more belongs to the validation split, any other to train.

-o table prints a line per incident, the score per family, the controls and
the overall score; -o json and -o yaml the contract of docs/eval.md.

An incident that cannot be loaded or analysed is reported with its path, and
eval exits 1 after scoring the rest; so does an overall score below --min.`,
		Example: `  faultline eval fixtures/zoo --split validation
  faultline eval fixtures/zoo/config-key/seed-3 -o json
  faultline eval fixtures/holdout --min 0.9
  faultline --store 'clickhouse://127.0.0.1:19001/faultline?cluster=faultline' eval fixtures/holdout
  faultline eval fixtures/zoo -j 4 -o json | jq '.families[] | select(.score < 0.8)'`,
		Args: argsAtLeast(1, "faultline eval fixtures/holdout"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.dirs = args
			opts.minSet = cmd.Flags().Changed("min")
			return evalRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.split, "split", fixtures.SplitAll, "incidents to score: train (seed < 100), validation (seed ≥ 100) or all")
	cmd.Flags().IntVarP(&opts.jobs, "jobs", "j", min(2, runtime.GOMAXPROCS(0)), "incidents replayed in parallel")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().Float64Var(&opts.min, "min", 0, "exit 1 when the overall score (0..1) is below this")
	return cmd
}

func (o *evalOptions) validate() error {
	switch {
	case !slices.Contains([]string{fixtures.SplitTrain, fixtures.SplitValidation, fixtures.SplitAll}, o.split):
		return usagef("faultline eval fixtures/zoo --split validation", "unknown --split %q: want train, validation or all", o.split)
	case o.jobs < 1:
		return usagef("faultline eval fixtures/zoo -j 2", "-j %d: want at least 1 incident at a time", o.jobs)
	case !slices.Contains([]string{"table", "json", "yaml"}, o.output):
		return usagef("faultline eval fixtures/holdout -o json", "unknown output %q: want table, json or yaml", o.output)
	case o.minSet && (o.min < 0 || o.min > 1):
		return usagef("faultline eval fixtures/holdout --min 0.9", "--min %g: want a score from 0 to 1", o.min)
	}
	return nil
}

// evalIncident is one incident selected for scoring.
type evalIncident struct {
	dir      string
	expected *fixtures.Expected
}

func evalRun(ctx context.Context, opts *evalOptions) error {
	if err := opts.validate(); err != nil {
		return err
	}
	todo, errs, err := selectIncidents(opts.dirs, opts.split)
	if err != nil {
		return err
	}
	if len(todo) == 0 && len(errs) == 0 {
		termsafe.Fprintf(opts.f.IO.ErrOut, "no incident of the %s split in %s\n", opts.split, strings.Join(opts.dirs, ", "))
	}
	results, scoreErrs, err := scoreIncidents(ctx, opts.f, todo, opts.jobs)
	if err != nil {
		return err
	}
	res := fixtures.Summarize(results, append(errs, scoreErrs...))
	if err := writeEval(opts.f, opts.output, res); err != nil {
		return err
	}
	below := opts.minSet && res.Overall.Below(opts.min)
	if len(res.Errors) > 0 || below {
		return &evalFailedError{unscored: len(res.Errors), incidents: len(res.Errors) + len(res.Incidents),
			below: below, score: res.Overall.Score, min: opts.min}
	}
	return nil
}

// selectIncidents finds the incident folders under dirs, reads their
// ground truth and keeps those of the split; a ground truth that does not
// load is an error of that incident.
func selectIncidents(dirs []string, split string) ([]evalIncident, []fixtures.EvalError, error) {
	var found []string
	for _, d := range dirs {
		in, err := fixtures.FindIncidents(d)
		if err != nil {
			return nil, nil, usagef("faultline eval fixtures/holdout", "%v", err)
		}
		found = append(found, in...)
	}
	slices.Sort(found)
	found = slices.Compact(found)
	var todo []evalIncident
	var errs []fixtures.EvalError
	for _, dir := range found {
		e, err := fixtures.LoadExpected(os.DirFS(dir))
		switch {
		case err != nil:
			errs = append(errs, fixtures.EvalError{Path: filepath.ToSlash(dir), Error: err.Error()})
		case fixtures.InSplit(split, e.Seed):
			todo = append(todo, evalIncident{dir: dir, expected: e})
		}
	}
	return todo, errs, nil
}

// scoreIncidents replays and scores the incidents, jobs at a time. An
// incident that fails is an EvalError; only an interrupt stops them all.
func scoreIncidents(ctx context.Context, f *Factory, todo []evalIncident, jobs int) ([]fixtures.IncidentResult, []fixtures.EvalError, error) {
	logger := f.Logger()
	results := make([]*fixtures.IncidentResult, len(todo))
	errs := make([]error, len(todo))
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, in := range todo {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			logger.Info("eval: replaying", "incident", in.dir)
			results[i], errs[i] = scoreIncident(ctx, logger, f.Now, f.storeDSN, in)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var out []fixtures.IncidentResult
	var evalErrs []fixtures.EvalError
	for i, in := range todo {
		if errs[i] != nil {
			evalErrs = append(evalErrs, fixtures.EvalError{Path: filepath.ToSlash(in.dir), Error: errs[i].Error()})
			continue
		}
		out = append(out, *results[i])
	}
	return out, evalErrs, nil
}

// scoreIncident replays one incident into a timeline of its own, removed
// afterwards, investigates it and scores the findings.
func scoreIncident(ctx context.Context, logger *slog.Logger, now func() time.Time, storeDSN string, in evalIncident) (*fixtures.IncidentResult, error) {
	// The timeline is removed afterwards: a key of its own, never stored,
	// hashes its secret values.
	key := make([]byte, redact.KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	load := incidentLoader{logger: logger, now: now, key: key, warnf: func(format string, args ...any) {
		logger.Warn(fmt.Sprintf(format, args...), "incident", in.dir)
	}}
	tl, err := newEvalTimeline(load, storeDSN)
	if err != nil {
		return nil, err
	}
	defer tl.remove(ctx, logger, in.dir)
	if _, err := load.ingest(ctx, os.DirFS(in.dir), in.dir, tl.write); err != nil {
		return nil, err
	}
	rep, cp, err := analyzeIncident(ctx, tl.read)
	if err != nil {
		return nil, err
	}
	res := fixtures.Score(filepath.ToSlash(in.dir), in.expected, rep, rep, cp)
	return &res, nil
}

// evalTimeline is the timeline of its own an incident is replayed into: a
// SQLite file in a temporary folder, or with --store a database on that
// cluster.
type evalTimeline struct {
	write, read opener
	dir         string // the temporary folder of the SQLite file
	dsn         string // the ClickHouse database
}

// evalDBPrefix begins the name of each database eval makes on a cluster:
// faultline_eval_ and 12 random hex digits.
const evalDBPrefix = "faultline_eval_"

// newEvalTimeline makes a timeline of its own: a temporary SQLite file, or
// a fresh database on the cluster storeDSN names, if any.
func newEvalTimeline(load incidentLoader, storeDSN string) (*evalTimeline, error) {
	if storeDSN == "" {
		dir, err := os.MkdirTemp("", "faultline-eval-")
		if err != nil {
			return nil, err
		}
		db := filepath.Join(dir, "faultline.db")
		return &evalTimeline{write: load.sqliteAt(db), read: sqliteReadOnly(db, load.logger), dir: dir}, nil
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	dsn, err := clickhouse.WithDatabase(storeDSN, evalDBPrefix+hex.EncodeToString(b[:]))
	if err != nil {
		return nil, err
	}
	open := load.clickhouseAt(dsn)
	return &evalTimeline{write: open, read: open, dsn: dsn}, nil
}

// evalDropTimeout bounds the drop of an incident's database, so that a
// shard that does not answer cannot hold eval up after an interrupt.
const evalDropTimeout = time.Minute

// remove removes the timeline: the folder, or the database on every shard.
// It runs also when the incident failed or ctx is done (Ctrl-C), so the
// drop uses a context of its own. A database it could not drop is a
// warning, naming it: the incident's score stands.
func (tl *evalTimeline) remove(ctx context.Context, logger *slog.Logger, incident string) {
	if tl.dsn == "" {
		os.RemoveAll(tl.dir)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), evalDropTimeout)
	defer cancel()
	if err := clickhouse.DropDatabase(ctx, tl.dsn); err != nil {
		logger.Warn("eval: the incident's database is left on the cluster: drop it by hand",
			"incident", incident, "store", tl.dsn, "err", err)
	}
}
