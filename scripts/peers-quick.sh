#!/usr/bin/env bash
# A quick interleaved comparison that needs no python (for a lent machine):
# Strata (READ ONLY hint and --no-ro-hint) against CCBench Silo on YCSB
# (1M rows, 10 ops, 80-byte rows, blind writes, 2 threads), per mix and
# round; TPC-C NewOrder+Payment against CCBench's tpcc_silo (2 warehouses);
# the 16-thread 50% update mix with and without GC.
#
#   usage: scripts/peers-quick.sh      (env: ROUNDS=2 DUR=3 BIN=target/dev)
#   BIN holds strata, silo.exe (CCBench silo built with -DVAL_SIZE=80),
#   tpcc_silo.exe (CCBench tpcc_silo) and, if the machine lacks it,
#   libgflags.so.2.2. See scripts/ccbench-vs-strata.sh for how CCBench is
#   built (never commit it).
BIN=${BIN:-target/dev}
export LD_LIBRARY_PATH=$BIN
S=$BIN/strata; C=$(awk '/^cpu MHz/{printf "%d", $4; exit}' /proc/cpuinfo)
R=${ROUNDS:-2}; D=${DUR:-3}
echo "clocks_per_us $C"; date
tps() { grep -o '"committed_per_s":[0-9.]*' | head -1 | cut -d: -f2; }
for r in $(seq 1 $R); do
  for m in "1.0 0" "1.0 0.9" "0.5 0" "0.5 0.9"; do
    set -- $m; rr=$1; th=$2; pct=$(awk -v r=$rr 'BEGIN{print r*100}')
    a=$($S bench ycsb --records 1000000 --threads 2 --duration $D --warmup 1 --read-ratio $rr --theta $th --json | tps)
    b=$($S bench ycsb --records 1000000 --threads 2 --duration $D --warmup 1 --read-ratio $rr --theta $th --no-ro-hint --json | tps)
    c=$($BIN/silo.exe -thread_num=2 -tuple_num=1000000 -max_ope=10 -rratio=$pct -zipf_skew=$th -ycsb=true -rmw=false -extime=$D -clocks_per_us=$C 2>&1 | awk -F'\t' '/^throughput\[tps\]:/{print $2}')
    echo "round $r mix r$pct-t$th strata-ssn $a strata-ssn-nohint $b cc-silo $c"
  done
  a=$($S bench tpcc --mix np --warehouses 2 --threads 2 --duration $D --json | tps)
  c=$($BIN/tpcc_silo.exe -extime $D -num_wh 2 -thread_num 2 -clocks_per_us $C 2>&1 | awk -F'\t' '/^throughput\[tps\]:/{print $2}')
  echo "round $r tpcc-np w2 t2 strata $a tpcc_silo $c"
done
for g in txn none; do
  a=$($S bench ycsb --records 1000000 --threads 16 --duration $D --read-ratio 0.5 --theta 0 --gc $g --json | tps)
  echo "u50 16 threads gc $g: $a"
done
date
