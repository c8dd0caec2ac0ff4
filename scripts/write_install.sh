#!/usr/bin/env bash
# Eager installs against installs at commit (issue 42, item 4;
# `Options::write_install`, `Options::backoff`): committed txn/s and abort
# rate per thread count, interleaved, medians of REPS runs.
#
#   usage: scripts/write_install.sh STRATA_BINARY [OUTDIR]
#   env:   THREADS ("4 8 16")  REPS (3)  DUR (2)  WARM (0.5)
#          RECORDS (1000000)  PROTOCOL (ssn)
#          WORKLOADS ("u50-z tpcc"): u50-z is YCSB 50% updates at
#          theta 0.9, u50 the same uniform, tpcc NewOrder + Payment with
#          warehouses = 1 (every thread on one warehouse's hot rows)
#          VARIANTS ("eager at-commit at-commit+regulated")
#
# Prints one line per workload, thread count and variant: the median
# committed/s, the median abort rate, and the ratio to eager's median.
# Every run's JSON line goes to OUTDIR/runs.jsonl (default: a temp dir).
set -u
BIN=${1:?usage: write_install.sh STRATA_BINARY [OUTDIR]}
OUT=${2:-$(mktemp -d)}
THREADS=${THREADS:-"4 8 16"}
REPS=${REPS:-3}
DUR=${DUR:-2}
WARM=${WARM:-0.5}
RECORDS=${RECORDS:-1000000}
PROTOCOL=${PROTOCOL:-ssn}
WORKLOADS=${WORKLOADS:-"u50-z tpcc"}
VARIANTS=${VARIANTS:-"eager at-commit at-commit+regulated"}
mkdir -p "$OUT"
variant_args() {
  case $1 in
    eager) echo "--write-install eager" ;;
    at-commit) echo "--write-install at-commit" ;;
    at-commit+regulated) echo "--write-install at-commit --backoff regulated" ;;
    eager+regulated) echo "--write-install eager --backoff regulated" ;;
  esac
}
run() { # workload threads variant -> "committed_per_s abort_rate"
  local w=$1 t=$2 v=$3 j
  # shellcheck disable=SC2046
  case $w in
    u50-z) j=$("$BIN" bench ycsb --protocol "$PROTOCOL" --records "$RECORDS" --threads "$t" \
      --read-ratio 0.5 --theta 0.9 --duration "$DUR" --warmup "$WARM" $(variant_args "$v") --json 2>/dev/null) ;;
    u50) j=$("$BIN" bench ycsb --protocol "$PROTOCOL" --records "$RECORDS" --threads "$t" \
      --read-ratio 0.5 --theta 0 --duration "$DUR" --warmup "$WARM" $(variant_args "$v") --json 2>/dev/null) ;;
    tpcc) j=$("$BIN" bench tpcc --protocol "$PROTOCOL" --mix np --warehouses 1 --threads "$t" \
      --duration "$DUR" --warmup "$WARM" $(variant_args "$v") --json 2>/dev/null) ;;
  esac
  printf '{"workload":"%s","threads":%s,"variant":"%s","run":%s}\n' "$w" "$t" "$v" "${j:-null}" \
    >>"$OUT/runs.jsonl"
  local c a
  c=$(grep -o '"committed_per_s":[0-9.e+-]*' <<<"$j" | head -1 | cut -d: -f2)
  a=$(grep -o '"abort_rate":[0-9.e+-]*' <<<"$j" | head -1 | cut -d: -f2)
  echo "${c:-0} ${a:-0}"
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
declare -A C A
for r in $(seq "$REPS"); do
  for w in $WORKLOADS; do
    for t in $THREADS; do
      for v in $VARIANTS; do
        read -r c a < <(run "$w" "$t" "$v")
        C[$w,$t,$v]+="$c "
        A[$w,$t,$v]+="$a "
        echo "rep $r $w threads $t $v: $c txn/s, abort rate $a" >&2
      done
    done
  done
done
printf '%-6s %7s %-22s %12s %8s %8s\n' workload threads variant "txn/s" "aborts" "vs eager"
for w in $WORKLOADS; do
  for t in $THREADS; do
    base=$(tr ' ' '\n' <<<"${C[$w,$t,eager]:-0}" | grep . | median)
    for v in $VARIANTS; do
      c=$(tr ' ' '\n' <<<"${C[$w,$t,$v]}" | grep . | median)
      a=$(tr ' ' '\n' <<<"${A[$w,$t,$v]}" | grep . | median)
      awk -v w="$w" -v t="$t" -v v="$v" -v c="$c" -v a="$a" -v b="$base" 'BEGIN {
        printf "%-6s %7s %-22s %12.0f %7.1f%% %8s\n", w, t, v, c, 100 * a, (b > 0) ? sprintf("%.2fx", c / b) : "-" }'
    done
  done
done
echo "runs: $OUT/runs.jsonl" >&2
