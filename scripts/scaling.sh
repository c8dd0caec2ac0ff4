#!/usr/bin/env bash
# Thread-scaling curve of `strata bench ycsb` (issue: performance, item 6).
#
#   usage: scripts/scaling.sh STRATA_BINARY OUTDIR
#   env:   THREADS ("1 2 4 8 16")  RECORDS (1000000)  DUR (3)  WARM (1)
#          PROTOCOLS ("ssn"; the extra protocols run the update mixes only
#          at the largest thread count)  EXTRA ("si mvocc")
#
# Mixes (10 operations per transaction, 80-byte rows, blind updates):
#   ro      read-only, uniform, READ ONLY hint
#   ro-full read-only, uniform, no hint (full serializable transactions)
#   u50     50% updates, uniform
#   u50-z   50% updates, theta 0.9
# Every run appends one JSON object to OUTDIR/runs.jsonl, tagged with its
# mix; a run that fails leaves its stderr in OUTDIR/err-*.txt.
set -u
BIN=${1:?usage: scaling.sh STRATA_BINARY OUTDIR}
OUT=${2:?usage: scaling.sh STRATA_BINARY OUTDIR}
THREADS=${THREADS:-"1 2 4 8 16"}
RECORDS=${RECORDS:-1000000}
DUR=${DUR:-3}
WARM=${WARM:-1}
EXTRA=${EXTRA:-"si mvocc"}
mkdir -p "$OUT"
mix_args() {
  case $1 in
    ro) echo "--read-ratio 1.0 --theta 0" ;;
    ro-full) echo "--read-ratio 1.0 --theta 0 --no-ro-hint" ;;
    u50) echo "--read-ratio 0.5 --theta 0" ;;
    u50-z) echo "--read-ratio 0.5 --theta 0.9" ;;
  esac
}
one() { # mix protocol threads
  local m=$1 p=$2 t=$3
  # shellcheck disable=SC2046
  if "$BIN" bench ycsb --protocol "$p" --records "$RECORDS" --threads "$t" \
      --duration "$DUR" --warmup "$WARM" $(mix_args "$m") --json \
      >"$OUT/one.json" 2>"$OUT/err-$m-$p-$t.txt"; then
    printf '{"mix":"%s",' "$m" >>"$OUT/runs.jsonl"
    tail -c +2 "$OUT/one.json" | tr -d '\n' >>"$OUT/runs.jsonl"
    echo >>"$OUT/runs.jsonl"
    rm -f "$OUT/err-$m-$p-$t.txt"
  fi
  grep -o '"committed_per_s":[0-9.]*' "$OUT/one.json" | sed "s/^/$m $p $t /"
}
nproc
for m in ro ro-full u50 u50-z; do
  for t in $THREADS; do one "$m" ssn "$t"; done
done
last=${THREADS##* }
for p in $EXTRA; do
  for m in u50 u50-z; do one "$m" "$p" "$last"; done
done
rm -f "$OUT/one.json"
# Where the time goes at the largest thread count, when perf is there.
if command -v perf >/dev/null && [ -n "${PERF:-1}" ] && [ "${PERF:-1}" != 0 ]; then
  # shellcheck disable=SC2046
  perf record -g -o "$OUT/perf.data" -- "$BIN" bench ycsb --records "$RECORDS" \
    --threads "$last" --duration "$DUR" --warmup "$WARM" $(mix_args u50-z) \
    >/dev/null 2>"$OUT/perf-record.txt" &&
    perf report -i "$OUT/perf.data" --stdio --no-children --percent-limit 1 \
      >"$OUT/perf-u50-z.txt" 2>/dev/null
  rm -f "$OUT/perf.data"
fi
