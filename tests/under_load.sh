#!/usr/bin/env bash
# The slow tier with every core kept busy: a test that holds only on an idle machine (a sleep that
# is just long enough, a deadline a little above what it takes) fails here rather than for a user.
#
#   tests/under_load.sh [RUNS] [PYTEST ARGS...]
#
# RUNS (default 3) runs of `pytest -m slow -n 2 --dist loadfile` (the slow tier on two parallel workers,
# as `make test` runs it; or the given pytest arguments), one after the other, each with N busy-loop
# processes beside it (N = the number of cores, or $LOAD_PROCESSES). Prints a
# line per run and where its log is; exits 0 only if every run passed. PYTHON picks the interpreter
# (default .venv/bin/python). The release check is three passes in a row: tests/under_load.sh 3
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
[ $# -gt 0 ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-m slow -n 2 --dist loadfile)
python=${PYTHON:-.venv/bin/python}
busy=${LOAD_PROCESSES:-$(nproc)}
logs=$(mktemp -d "${TMPDIR:-/tmp}/biaseval-under-load.XXXXXX")
load=()

stop_load() {
  for pid in "${load[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${load[@]}"; do wait "$pid" 2>/dev/null; done
  load=()
}
trap stop_load EXIT
trap 'stop_load; exit 130' INT TERM

failed=0
for run in $(seq "$runs"); do
  for _ in $(seq "$busy"); do
    (trap - INT TERM; while :; do :; done) &
    load+=($!)
  done
  log="$logs/run-$run.log"
  start=$(date +%s)
  "$python" -m pytest -q -p no:cacheprovider -rfE "${args[@]}" >"$log" 2>&1
  status=$?
  stop_load
  summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error)|^FAILED|^ERROR' "$log" | tail -n 20)
  echo "under load ($busy busy processes): run $run of $runs: exit $status in $(( $(date +%s) - start )) s — $log"
  echo "$summary" | sed 's/^/    /'
  [ "$status" -ne 0 ] && failed=$((failed + 1))
done
if [ "$failed" -ne 0 ]; then
  echo "under load: $failed of $runs runs failed"
  exit 1
fi
echo "under load: all $runs runs passed"
