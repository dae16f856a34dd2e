# Sourced by the scenario scripts: kubectl against the running test control
# plane (hack/cluster/up), and small helpers.
set -euo pipefail
scenario_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
eval "$(bash "$scenario_dir/../env")"
k() { kubectl "$@"; }
log() { echo "scenario: $*" >&2; }

# wait_until SECONDS COMMAND...: poll until the command succeeds.
wait_until() {
  local secs=$1; shift
  for _ in $(seq 1 $((secs * 2))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "timed out after ${secs}s: $*"
  return 1
}

# count_pods NS PHASE
count_pods() { k get pods -n "$1" --field-selector "status.phase=$2" -o name | wc -l; }
