#!/usr/bin/env bash
# Strata vs CCBench, YCSB, interleaved rounds, on this machine.
#
#   usage: ccbench-vs-strata.sh STRATA_CHECKOUT [OUTDIR]
#   env:   ROUNDS (3)  DUR (5 s measured)  WARM (1 s, Strata only)
#          RECORDS (1000000)  THREADS (2)  OPS (10)
#          PEERS=0 skips the `--engine all` runs; MEMLAT=0 skips memory_latency
#          CLOCKS_PER_US (CCBench's TSC rate; default: /proc/cpuinfo "cpu MHz")
#          QUIET_FRAC (0.10): before each run, wait (QUIET_MAX s at most, 900;
#          QUIET_TOTAL s over the batch, 3600) until the machine's busy share
#          over 2 s is below this (both cores)
#   OUTDIR (default ./perf-<date>) gets raw logs, runs.csv, summary.txt.
#   runs.csv's other_cpu_s = CPU seconds the machine spent during the run
#   beyond the benchmark process's own: anything over ~1 s means another job
#   ran alongside; the summary lists those runs.
#   xcore_before_ns/xcore_after_ns: the cross-core round trip (Strata's
#   `core_latency` example, 0.5 s) just before and just after the run. On
#   a VM it can flip between modes (80 ns and 390 ns on the development
#   VM) and line-sharing workloads follow it, so the summary labels each
#   run fast (both probes under 1.6x the batch's lowest), slow (both over
#   2.5x) or mixed, and repeats the table for the fast and the slow runs.
#   XCORE=0 skips the probes.
#   Summary only, from an existing OUTDIR:  SUMMARY_ONLY=1 ccbench-vs-strata.sh STRATA OUTDIR
#
# Engines: Strata with --protocol ssn (default, SI+SSN), mvocc, si, and
# strata-ssn-nohint (SI+SSN with --no-ro-hint: read-only mixes run as full
# serializable transactions, like CCBench's, instead of READ ONLY; on the
# r50 mixes it is strata-ssn run again, and the summary's "control" line
# shows how far noise alone moved that median),
# strata-ssn-fuw (SI+SSN with --no-blind-writes: first updater wins on
# every write, ERMIA's rule, instead of SSN-certified blind overwrites); CCBench
# silo, ermia, si, cicada.  Mixes: r100/r50 (read ratio) x theta 0/0.9.
# ENGINES="a b ..." and MIXES="..." pick a subset. (A copy of the script
# handed to us in ../shared/bench, with the unhinted engine added.)
# A round runs every engine once on every mix: mix-major (all engines on one
# mix back to back), mix order rotated by 1 and engine order by 3 each round
# (by 1 when the engine count is a multiple of 3).
# Neither side pins threads (CCBench's setThreadAffinity is compiled out:
# its `#ifdef Linux` is never defined by the CMake build).
#
# ---- How CCBench was built (under /tmp/ccbench; never commit it) ----------
#   mkdir -p /tmp/ccbench
#   git -C <a clone of github thawk105/ccbench (the fetch tool brings one)> archive HEAD | tar -x -C /tmp/ccbench
#     (HEAD a4d4633; submodules are not in the archive: copy each at the
#      commit `git ls-tree HEAD third_party/` records)
#   for n in masstree:thawk105/masstree-beta:d4bcf7711dc027818b1719a5a4c29aee547c58f6 \
#            mimalloc:microsoft/mimalloc:a9686d6ecf00e4467e772f7c0b4ef76a15f325f6 \
#            spdlog:gabime/spdlog:fa659bf7ad327a13e2e7134d1004d0cda0c3ed96; do
#     # mkdir third_party/<name>; git -C <mirror> archive <commit> | tar -x -C third_party/<name>
#   done      # googletest is not needed for the benchmark binaries
#   apt-get update; apt-get install -y cmake cmake-curses-gui \
#       libboost-filesystem-dev libgflags-dev libgoogle-glog-dev autoconf automake
#   cd /tmp/ccbench && bash build_tools/bootstrap.sh        # masstree -> libkohler_masstree_json.a
#   cd third_party/mimalloc && mkdir -p out/release && cd out/release && \
#       cmake -DCMAKE_BUILD_TYPE=Release ../.. && make -j2    # libmimalloc.a
#   TPC-C (`tpcc_silo`, scripts/peers-quick.sh): its CMakeLists bakes the
#   build machine's core count into KVS_NUMBER_OF_LOGICAL_CORES, which sizes
#   its per-thread garbage lists, so a binary built on 2 cores crashes
#   (SIGSEGV in mi_free under session_info::gc_records_and_values) with 3
#   or more threads. To run it wider, build it with the count raised:
#     sed -i 's/-DKVS_NUMBER_OF_LOGICAL_CORES=${cores}/-DKVS_NUMBER_OF_LOGICAL_CORES=64/' \
#         /tmp/ccbench/tpcc_silo/CMakeLists.txt
#     mkdir -p /tmp/ccbench/tpcc_silo/build && cd /tmp/ccbench/tpcc_silo/build && \
#     cmake -DCMAKE_BUILD_TYPE=Release .. && make -j2 silo.exe
#   for p in silo ermia si cicada; do
#     mkdir -p /tmp/ccbench/$p/build && cd /tmp/ccbench/$p/build && \
#     cmake -DCMAKE_BUILD_TYPE=Release -DVAL_SIZE=80 .. && make -j2 $p.exe
#   done      # cicada needs third_party/spdlog (headers only)
#   (CCBench's CI builds Debug with ASan; Release is -O3 -DNDEBUG.)
#   With GCC 12 add -DCMAKE_CXX_FLAGS=-w to each cmake line: CCBench builds
#   with -Wall -Wextra -Werror, and masstree's headers warn there
#   (deprecated std::unary_function, memset on a class); -w only silences
#   warnings, the code generated is the same.
#
# ---- Strata -----------------------------------------------------------------
#   cd STRATA_CHECKOUT && cargo build --release -p strata-cli && \
#   cargo build --release -p strata --example memory_latency --example core_latency
# The binaries are copied into OUTDIR/bin first, so a rebuild in the checkout
# during the batch cannot change what is measured.
set -u
S=${1:?usage: ccbench-vs-strata.sh STRATA_CHECKOUT [OUTDIR]}
OUT=${2:-./perf-$(date +%Y%m%d-%H%M%S)}
CC=/tmp/ccbench
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
WARM=${WARM:-1}
RECORDS=${RECORDS:-1000000}
THREADS=${THREADS:-2}
OPS=${OPS:-10}
PEERS=${PEERS:-1}
MEMLAT=${MEMLAT:-1}
XCORE=${XCORE:-1}
CLOCKS=${CLOCKS_PER_US:-$(awk '/^cpu MHz/{printf "%d", $4; exit}' /proc/cpuinfo)}

ALL_ENGINES="strata-ssn strata-ssn-nohint strata-ssn-fuw strata-mvocc strata-si cc-silo cc-ermia cc-si cc-cicada"
read -r -a ENGINES <<<"${ENGINES:-$ALL_ENGINES}"
read -r -a MIXES <<<"${MIXES:-r100-t0 r100-t0.9 r50-t0 r50-t0.9}"

mkdir -p "$OUT/raw" "$OUT/bin"
CSV="$OUT/runs.csv"

QUIET_FRAC=${QUIET_FRAC:-0.10}
QUIET_MAX=${QUIET_MAX:-900}        # per run
QUIET_TOTAL=${QUIET_TOTAL:-3600}   # over the whole batch
QUIET_SPENT=0
# busy and total jiffies of all CPUs
HZ=$(getconf CLK_TCK)
stat_cpu() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9; exit}' /proc/stat; }
quiet_gate() {
  local waited=0 b0 t0 b1 t1 frac
  while :; do
    read -r b0 t0 < <(stat_cpu); sleep 2; read -r b1 t1 < <(stat_cpu)
    frac=$(awk -v a=$((b1 - b0)) -v b=$((t1 - t0)) 'BEGIN{printf "%.3f", (b > 0 ? a / b : 0)}')
    if awk -v f="$frac" -v q="$QUIET_FRAC" 'BEGIN{exit !(f < q)}' || [ "$waited" -ge "$QUIET_MAX" ] ||
       [ "$QUIET_SPENT" -ge "$QUIET_TOTAL" ]; then
      [ "$waited" -gt 0 ] && echo "  (waited ${waited}s for a quiet machine; busy share now $frac)"
      return
    fi
    sleep 13; waited=$((waited + 15)); QUIET_SPENT=$((QUIET_SPENT + 15))
  done
}

xcore() { # median cross-core round trip now, ns (NA without the probe)
  [ "$XCORE" = 1 ] || { echo NA; return; }
  "$OUT/bin/core_latency" 0.5 2>/dev/null | awk '{print $2; f=1} END{if(!f)print "NA"}'
}

mix_rr() { local m=${1#r}; echo "${m%%-*}"; }          # 100 | 50 (percent)
mix_theta() { echo "${1##*-t}"; }                       # 0 | 0.9

run_one() { # engine mix round seq
  local e=$1 m=$2 r=$3 q=$4 rr th log tps ab load
  rr=$(mix_rr "$m"); th=$(mix_theta "$m")
  log="$OUT/raw/r${r}-$(printf %02d "$q")-$e-$m.log"
  quiet_gate
  load=$(cut -d' ' -f1 /proc/loadavg)
  local b0 t0 b1 t1 own other x0 x1
  x0=$(xcore)
  read -r b0 t0 < <(stat_cpu)
  case $e in
    strata-*)
      local proto=${e#strata-} hint=
      [ "${proto%-nohint}" != "$proto" ] && { proto=${proto%-nohint}; hint=--no-ro-hint; }
      [ "${proto%-fuw}" != "$proto" ] && { proto=${proto%-fuw}; hint=--no-blind-writes; }
      # shellcheck disable=SC2086
      /usr/bin/time -f '%U %S' -o "$log.cpu" timeout 300 "$OUT/bin/strata" bench ycsb --protocol "$proto" $hint \
        --records "$RECORDS" --threads "$THREADS" --ops-per-txn "$OPS" \
        --duration "$DUR" --warmup "$WARM" \
        --read-ratio "$(awk -v r="$rr" 'BEGIN{print r/100}')" --theta "$th" \
        --json >"$log" 2>&1
      tps=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round(d["committed_per_s"]), "%.4f" % d["abort_rate"])' "$log" 2>/dev/null)
      ;;
    cc-*)
      local p=${e#cc-}
      /usr/bin/time -f '%U %S' -o "$log.cpu" timeout 300 "$CC/$p/build/$p.exe" -thread_num="$THREADS" -tuple_num="$RECORDS" \
        -max_ope="$OPS" -rratio="$rr" -zipf_skew="$th" -ycsb=true -rmw=false \
        -extime="$DUR" -clocks_per_us="$CLOCKS" >"$log" 2>&1
      tps=$(awk -F'\t' '/^throughput\[tps\]:/{t=$2} /^abort_rate:/{a=$2} END{if(t!="")print t, a}' "$log")
      ;;
  esac
  read -r b1 t1 < <(stat_cpu)
  x1=$(xcore)
  own=$(awk 'NR==1 && NF==2 {print $1 + $2}' "$log.cpu" 2>/dev/null)
  other=$(awk -v b=$((b1 - b0)) -v o="${own:-0}" -v hz="$HZ" 'BEGIN{printf "%.2f", b / hz - o}')
  [ -n "$tps" ] || tps="NA NA"
  set -- $tps
  echo "$r,$q,$e,$m,$1,$2,$load,$(date +%H:%M:%S),$other,$x0,$x1" >>"$CSV"
  printf 'round %s #%02d %-13s %-9s %12s txn/s  abort %s  (load %s, other cpu %ss, cross-core %s/%s ns)\n' "$r" "$q" "$e" "$m" "$1" "$2" "$load" "$other" "$x0" "$x1"
}

summary() {
python3 - "$CSV" "$OUT" <<'EOF'
import csv, statistics, sys, os, glob, json
rows = list(csv.reader(open(sys.argv[1])))[1:]
out = sys.argv[2]
mixes = ["r100-t0","r100-t0.9","r50-t0","r50-t0.9"]
ALL = ["strata-ssn","strata-ssn-nohint","strata-ssn-fuw","strata-mvocc","strata-si","cc-silo","cc-ermia","cc-si","cc-cicada"]
def num(x):
    try: return float(x)
    except ValueError: return None
# Cross-core mode of each run, from the probes around it (see the header).
probes = [num(x) for r in rows if len(r) > 10 for x in r[9:11] if num(x) is not None]
# The batch's low: its 10th percentile, not its minimum (a probe once read
# 29 ns where the fast mode is ~65 ns, and every run then looked "mixed").
low = sorted(probes)[len(probes) // 10] if probes else None
def mode(r):
    if low is None or len(r) < 11 or num(r[9]) is None or num(r[10]) is None: return "?"
    a, b = num(r[9]), num(r[10])
    if max(a, b) < 1.6 * low: return "fast"
    if min(a, b) > 2.5 * low: return "slow"
    return "mixed"
def table(title, keep):
    data = {}
    for r in rows:
        if r[4] == "NA" or not keep(r): continue
        data.setdefault((r[2], r[3]), []).append((float(r[4]), float(r[5])))
    if not data: return
    engines = [e for e in ALL if any(k[0] == e for k in data)]
    def med(e, m):
        v = data.get((e, m));  return statistics.median(x for x, _ in v) if v else float("nan")
    print("== " + title)
    print("committed txn/s: median [min-max] over rounds (n), abort % median")
    print("%-13s" % "engine" + "".join("| %-40s" % m for m in mixes))
    for e in engines:
        line = "%-13s" % e
        for m in mixes:
            v = data.get((e, m), [])
            if not v: line += "| %-40s" % "-"; continue
            t = [x for x, _ in v]; a = [y for _, y in v]
            line += "| %-40s" % ("%9.0f [%.0f-%.0f] (%d) %.2f%%" % (statistics.median(t), min(t), max(t), len(t), 100*statistics.median(a)))
        print(line)
    print()
    print("ratios of medians")
    pairs = [p for p in [("strata-ssn","cc-silo"),("strata-ssn-nohint","cc-silo"),("strata-ssn-fuw","cc-silo"),("strata-ssn","cc-ermia"),("strata-si","cc-si")] if p[0] in engines and p[1] in engines]
    print("%-26s" % "ratio" + "".join("| %-10s" % m for m in mixes))
    for a, b in pairs:
        print("%-26s" % (a + "/" + b) + "".join("| %-10.2f" % (med(a, m) / med(b, m)) for m in mixes))
    line = "%-26s" % "best-strata/best-ccbench"
    names = []
    for m in mixes:
        st = [e for e in engines if e.startswith("strata") and (e, m) in data]; cc = [e for e in engines if e.startswith("cc-") and (e, m) in data]
        if not st or not cc: line += "| %-10s" % "-"; continue
        bs = max(st, key=lambda e: med(e, m)); bc = max(cc, key=lambda e: med(e, m))
        line += "| %-10.2f" % (med(bs, m) / med(bc, m)); names.append("%s: %s / %s" % (m, bs, bc))
    print(line)
    print("  (" + "; ".join(names) + ")")
    # strata-ssn and strata-ssn-nohint differ only in the READ ONLY hint,
    # which the update mixes never use: on those mixes they are one
    # configuration run twice, and their ratio shows how far this batch's
    # noise alone moves a median.
    if "strata-ssn" in engines and "strata-ssn-nohint" in engines:
        print("%-26s" % "control: ssn-nohint/ssn" + "".join(
            ("| %-10.2f" % (med("strata-ssn-nohint", m) / med("strata-ssn", m))) if m.startswith("r50") else "| %-10s" % "(hint)"
            for m in mixes) + "  (the same engine on the r50 mixes)")
    print()
table("all runs", lambda r: True)
if low is not None:
    modes = [mode(r) for r in rows]
    print("cross-core round trip: lowest probe %.0f ns; runs fast %d, slow %d, mixed %d"
          % (low, modes.count("fast"), modes.count("slow"), modes.count("mixed")))
    print()
    table("fast cross-core mode only", lambda r: mode(r) == "fast")
    table("slow cross-core mode only", lambda r: mode(r) == "slow")
noisy = [r for r in rows if len(r) > 8 and float(r[8]) > 1.0]
print()
print("runs with > 1 CPU-s of other work alongside: %d of %d" % (len(noisy), len(rows)))
for r in noisy: print("  round %s #%s %s %s: %s s" % (r[0], r[1], r[2], r[3], r[8]))
EOF
}

if [ "${SUMMARY_ONLY:-0}" = 1 ]; then summary; exit 0; fi

cp "$S/target/release/strata" "$OUT/bin/strata" || exit 1
if [ "$XCORE" = 1 ]; then cp "$S/target/release/examples/core_latency" "$OUT/bin/core_latency" || exit 1; fi
[ "$MEMLAT" = 1 ] && cp "$S/target/release/examples/memory_latency" "$OUT/bin/memory_latency"
for e in "${ENGINES[@]}"; do p=${e#cc-}; [ "$p" = "$e" ] || [ -x "$CC/$p/build/$p.exe" ] || echo "missing $CC/$p/build/$p.exe" >&2; done
{
  echo "date: $(date -Is)"; echo "host: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo)"
  echo "strata: $(git -C "$S" rev-parse --short HEAD 2>/dev/null) $(git -C "$S" status --porcelain 2>/dev/null | wc -l) dirty files"
  echo "ccbench clocks_per_us=$CLOCKS rounds=$ROUNDS dur=$DUR warm=$WARM records=$RECORDS threads=$THREADS ops=$OPS"
  echo "thp: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
} | tee "$OUT/meta.txt"
echo "round,seq,engine,mix,txn_per_s,abort_rate,load1,end_time,other_cpu_s,xcore_before_ns,xcore_after_ns" >"$CSV"

[ "$MEMLAT" = 1 ] && { quiet_gate; echo "== memory_latency (before)"; "$OUT/bin/memory_latency" 2>&1 | tee "$OUT/memlat-before.txt"; }

NE=${#ENGINES[@]}; NM=${#MIXES[@]}
# Engine order moves by 3 each round, or by 1 where 3 would bring it back
# to the same order (3, 6, 9 engines): each engine then follows a
# different one, so no engine always runs right after the same peer.
STEP=3; [ $((NE % 3)) = 0 ] && STEP=1
for ((r = 1; r <= ROUNDS; r++)); do
  q=0
  for ((i = 0; i < NM; i++)); do
    m=${MIXES[$(((i + r - 1) % NM))]}
    for ((j = 0; j < NE; j++)); do
      e=${ENGINES[$(((j + STEP * (r - 1)) % NE))]}
      q=$((q + 1)); run_one "$e" "$m" "$r" "$q"
    done
  done
done

if [ "$PEERS" = 1 ]; then
  for m in r100-t0 r50-t0.9; do
    rr=$(mix_rr "$m"); th=$(mix_theta "$m")
    quiet_gate; echo "== strata bench ycsb --engine all, $m"
    timeout 900 "$OUT/bin/strata" bench ycsb --engine all --records "$RECORDS" \
      --threads "$THREADS" --ops-per-txn "$OPS" --duration "$DUR" --warmup "$WARM" \
      --read-ratio "$(awk -v r="$rr" 'BEGIN{print r/100}')" --theta "$th" --csv 2>&1 \
      | tee "$OUT/peers-$m.csv"
  done
fi

[ "$MEMLAT" = 1 ] && { quiet_gate; echo "== memory_latency (after)"; "$OUT/bin/memory_latency" 2>&1 | tee "$OUT/memlat-after.txt"; }

summary | tee "$OUT/summary.txt"
