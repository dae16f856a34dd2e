# Helpers shared by hack/bench/run and hack/bench/crash (sourced, not run).

# need TOOL [PACKAGE]: makes sure TOOL is on PATH, installing PACKAGE (default
# TOOL) with apt-get when it is missing. A tool that cannot be had stops the
# run with an error: a benchmark never skips a figure silently (under CI too).
need() {
  local tool=$1 pkg=${2:-$1} sudo=""
  command -v "$tool" >/dev/null && return
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "$tool is missing: installing $pkg with apt-get..." >&2
  if command -v apt-get >/dev/null; then
    $sudo apt-get install -y -qq "$pkg" >&2 ||
      { $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq "$pkg" >&2; } || true
  fi
  command -v "$tool" >/dev/null || {
    echo "error: $tool is missing and could not be installed; install the $pkg package and rerun" >&2
    exit 1
  }
}

# loadavg: the 1, 5 and 15 minute load averages, e.g. "1.52 0.98 0.71".
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# wall FILE / peakrss FILE: wall-clock seconds and peak RSS in MiB from a
# GNU time -v report.
wall() { awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$1"; }
peakrss() { awk -F': ' '/Maximum resident set size/ { print int($2 / 1024) }' "$1"; }

# dbbytes DB: the bytes of a timeline on disk: the file and its WAL.
dbbytes() {
  local n=0 f
  for f in "$1" "$1-wal"; do [ -f "$f" ] && n=$((n + $(stat -c %s "$f"))); done
  echo "$n"
}

# checkpoint DB: folds the WAL into the file and truncates it, so that the
# size of the file is the size of the data.
checkpoint() { sqlite3 "$1" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null; }

# audit_records FL DB: the audit records the timeline DB holds, as the store
# counts them (faultline sources -o json).
audit_records() { "$1" --db "$2" sources -o json | jq '[.sources[] | select(.source == "audit") | .records] | add // 0'; }
