#!/usr/bin/env bash
# Thread-scaling curve of `strata bench ycsb` (issue: performance, item 6).
#
#   usage: scripts/scaling.sh STRATA_BINARY OUTDIR
#   env:   THREADS ("1 2 4 8 16")  RECORDS (1000000)  DUR (3)  WARM (1)
#          MIXES ("ro ro-full u50 u50-z")
#          EXTRA ("si mvocc ssn-fuw ssn-ac occ-ac": more protocols,
#          update mixes only, at the largest thread count; ssn-fuw is
#          SI+SSN with --no-blind-writes, ERMIA's first-updater-wins; a
#          -ac suffix installs writes at commit (--write-install
#          at-commit, issue 42 item 4; scripts/write_install.sh compares
#          the two installs at several thread counts); the default
#          protocol also runs them there once with `--gc none`, to show
#          what the collector costs)
#          TPCC_SILO (path to CCBench's tpcc_silo silo.exe, built with
#          KVS_NUMBER_OF_LOGICAL_CORES=64 as in ccbench-vs-strata.sh's
#          header): when set, TPC-C NewOrder + Payment runs too, Strata
#          (names through the secondary index, then `--by-name list`, as
#          tpcc_silo finds them) and tpcc_silo at every thread count,
#          warehouses = threads; one line each in OUTDIR/tpcc.txt
#          SILO (path to CCBench's silo.exe, built as in
#          ccbench-vs-strata.sh's header; when set, Silo runs the
#          same mixes at every thread count, tagged "cc-silo")
#          CLOCKS (CCBench's -clocks_per_us: the TSC's MHz, which sets
#          how long Silo runs and so its txn/s; when unset, /proc/cpuinfo's
#          first "cpu MHz", usually but not always the TSC's rate: measure
#          it where in doubt)
#
# Mixes (10 operations per transaction, 80-byte rows, blind updates):
#   ro      read-only, uniform, READ ONLY hint
#   ro-full read-only, uniform, no hint (full serializable transactions)
#   u50     50% updates, uniform
#   u50-z   50% updates, theta 0.9
# BREAKDOWN (1): time per component at the largest thread count, in
#   OUT/breakdown.txt (0 skips it)
# Every run appends one JSON object to OUTDIR/runs.jsonl, tagged with its
# mix and variant (the protocol, or ssn-fuw); a run that fails leaves its stderr in OUTDIR/err-*.txt.
set -u
BIN=${1:?usage: scaling.sh STRATA_BINARY OUTDIR}
OUT=${2:?usage: scaling.sh STRATA_BINARY OUTDIR}
THREADS=${THREADS:-"1 2 4 8 16"}
RECORDS=${RECORDS:-1000000}
DUR=${DUR:-3}
WARM=${WARM:-1}
EXTRA=${EXTRA:-"si mvocc ssn-fuw ssn-ac occ-ac"}
TPCC_SILO=${TPCC_SILO:-}
SILO=${SILO:-}
CLOCKS=${CLOCKS:-$(awk -F: '/cpu MHz/ {printf "%d", $2; exit}' /proc/cpuinfo)}
mkdir -p "$OUT"
mix_args() {
  case $1 in
    ro) echo "--read-ratio 1.0 --theta 0" ;;
    ro-full) echo "--read-ratio 1.0 --theta 0 --no-ro-hint" ;;
    u50) echo "--read-ratio 0.5 --theta 0" ;;
    u50-z) echo "--read-ratio 0.5 --theta 0.9" ;;
  esac
}
silo_args() {
  case $1 in
    u50) echo "-rratio=50 -zipf_skew=0" ;;
    u50-z) echo "-rratio=50 -zipf_skew=0.9" ;;
    *) echo "-rratio=100 -zipf_skew=0" ;;
  esac
}
silo() { # mix threads: one line like Strata's, from Silo's throughput line
  local m=$1 t=$2 tps
  # shellcheck disable=SC2046
  tps=$("$SILO" -thread_num="$t" -tuple_num="$RECORDS" -max_ope=10 \
    $(silo_args "$m") -ycsb=true -rmw=false -extime="$DUR" \
    -clocks_per_us="$CLOCKS" 2>&1 | awk -F'\t' '/^throughput\[tps\]:/ {print $2}')
  [ -n "$tps" ] && printf '{"mix":"%s","engine":"cc-silo","threads":%s,"committed_per_s":%s}\n' \
    "$m" "$t" "$tps" >>"$OUT/runs.jsonl"
  echo "$m cc-silo $t ${tps:-failed}"
}
one() { # mix protocol threads [extra strata args]
  local m=$1 p=$2 t=$3
  shift 3
  [ "$p" = ssn-fuw ] && set -- --no-blind-writes "$@"
  case $p in *-ac) set -- --write-install at-commit "$@" ;; esac
  # shellcheck disable=SC2046
  if "$BIN" bench ycsb --protocol "${p%-*}" --records "$RECORDS" --threads "$t" \
      --duration "$DUR" --warmup "$WARM" $(mix_args "$m") "$@" --json \
      >"$OUT/one.json" 2>"$OUT/err-$m-$p-$t.txt"; then
    printf '{"mix":"%s","variant":"%s",' "$m" "$p" >>"$OUT/runs.jsonl"
    tail -c +2 "$OUT/one.json" | tr -d '\n' >>"$OUT/runs.jsonl"
    echo >>"$OUT/runs.jsonl"
    rm -f "$OUT/err-$m-$p-$t.txt"
  fi
  grep -o '"committed_per_s":[0-9.]*' "$OUT/one.json" | sed "s/^/$m $p $t /"
}
nproc
MIXES=${MIXES:-"ro ro-full u50 u50-z"}
for m in $MIXES; do
  for t in $THREADS; do
    one "$m" ssn "$t"
    # Silo has no read-only hint: its one read-only run stands beside ro-full.
    if [ -n "$SILO" ] && [ "$m" != ro ]; then silo "$m" "$t"; fi
  done
done
if [ -n "$TPCC_SILO" ]; then
  for t in $THREADS; do
    # The default finds Payment's customer by last name through the
    # secondary index; `--by-name list` as tpcc_silo does (a list loaded
    # once): the like-for-like column.
    tpcc_run() {
      "$BIN" bench tpcc --mix np --warehouses "$t" --threads "$t" --duration "$DUR" \
        --warmup "$WARM" --json "$@" 2>/dev/null | grep -o '"committed_per_s":[0-9.]*' | head -1 | cut -d: -f2
    }
    s=$(tpcc_run)
    l=$(tpcc_run --by-name list)
    c=$(timeout 120 "$TPCC_SILO" -extime "$DUR" -num_wh "$t" -thread_num "$t" \
      -clocks_per_us "$CLOCKS" 2>&1 | awk -F'\t' '/^throughput\[tps\]:/ {print $2}')
    echo "tpcc threads $t strata ${s:-failed} strata-list ${l:-failed} tpcc_silo ${c:-failed}" | tee -a "$OUT/tpcc.txt"
  done
fi
last=${THREADS##* }
for p in $EXTRA; do
  for m in u50 u50-z; do one "$m" "$p" "$last"; done
done
for m in u50 u50-z; do one "$m" ssn "$last" --gc none | sed 's/^/gc-none /'; done
rm -f "$OUT/one.json"
# Issue 42, item 1: where a transaction's time goes at the largest thread
# count, by engine component (Options::time_breakdown: index, version read,
# version install, CC, log, GC, the rest), for 50% updates and for TPC-C's
# NewOrder and Payment alone (mix percentages), one line each in
# OUT/breakdown.txt (BREAKDOWN=0 skips it).
if [ "${BREAKDOWN:-1}" != 0 ]; then
  for m in u50 u50-z; do
    # shellcheck disable=SC2046
    "$BIN" bench ycsb --records "$RECORDS" --threads "$last" --duration "$DUR" \
      --warmup "$WARM" $(mix_args "$m") --time-breakdown 2>/dev/null |
      grep '^time per committed' | sed "s/^/ycsb $m threads $last: /" | tee -a "$OUT/breakdown.txt"
  done
  for tx in "new-order 100,0,0,0,0" "payment 0,100,0,0,0"; do
    "$BIN" bench tpcc --mix "${tx#* }" --warehouses "$last" --threads "$last" \
      --duration "$DUR" --warmup "$WARM" --time-breakdown 2>/dev/null |
      grep '^time per committed' | sed "s/^/tpcc ${tx% *} threads $last: /" | tee -a "$OUT/breakdown.txt"
  done
fi
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
