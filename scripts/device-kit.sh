#!/usr/bin/env bash
# Packs what the lent 16-core machine needs for issue 42's scaling checks
# into results/device-kit/ (ignored by git; name it in the device tool's
# `carry`), because that machine reaches nothing: no crates to build
# from, no CCBench to clone.
#
#   usage: scripts/device-kit.sh
#   env:   CCBENCH (/tmp/ccbench): a CCBench tree built as
#          ccbench-vs-strata.sh's header says; when its silo.exe and
#          tpcc_silo binaries are there, they go in the kit with the
#          shared libraries they load (ldd), else the kit is Strata's alone
#
# What goes in (a few MiB; the device tool carries 64 MiB in all):
#   strata          the release CLI, stripped (with debuginfo it is ~80 MiB)
#   silo.exe, tpcc_silo, lib/   CCBench, when built here
#   run.sh          the one prepared command (below)
#
# On the device, one `run` call (timeout_s 600), from the repository root:
#   bash results/device-kit/run.sh
# It runs scripts/scaling.sh (1-16 threads, the four YCSB mixes, TPC-C
# against tpcc_silo when present, the at-commit variants, the time
# breakdown) and then scripts/write_install.sh (4/8/16 threads), about
# 8 minutes, and leaves one file, $OUT/device-results.tar.gz (the tool
# brings back at most 8 files). BUDGET_S (540) caps it: the scaling
# script runs first, and write_install.sh only if the time left allows.
set -eu
top=$(git rev-parse --show-toplevel)
kit="$top/results/device-kit"
cc=${CCBENCH:-/tmp/ccbench}
cd "$top"
cargo build --release -p strata-cli
rm -rf "$kit"
mkdir -p "$kit/lib"
strip -o "$kit/strata" target/release/strata
"$kit/strata" --version >/dev/null
for b in "$cc/silo/build/silo.exe" "$cc/tpcc_silo/build/silo.exe"; do
  [ -x "$b" ] || continue
  name=$(basename "$(dirname "$(dirname "$b")")")
  [ "$name" = silo ] && dest="$kit/silo.exe" || dest="$kit/tpcc_silo"
  strip -o "$dest" "$b"
  # The libraries it loads that a bare machine may lack (boost, glog,
  # gflags...), not the C library's own.
  ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux)[.-]' |
    while read -r l; do cp -L "$l" "$kit/lib/"; done
done
cat >"$kit/run.sh" <<'RUN'
#!/usr/bin/env bash
# The device run (see scripts/device-kit.sh). From the repository root.
set -u
kit=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/device-out}
BUDGET_S=${BUDGET_S:-540}
res=$(mktemp -d)
start=$(date +%s)
export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "== machine"; nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2
  echo "== kit"; ls -la "$kit"
} >"$res/machine.txt" 2>&1
[ -x "$kit/silo.exe" ] && export SILO="$kit/silo.exe"
[ -x "$kit/tpcc_silo" ] && export TPCC_SILO="$kit/tpcc_silo"
PERF=${PERF:-0} bash scripts/scaling.sh "$kit/strata" "$res/scaling" >"$res/scaling.txt" 2>&1
left=$((BUDGET_S - ($(date +%s) - start)))
echo "scaling took $(( $(date +%s) - start )) s; $left s left" >>"$res/machine.txt"
if [ "$left" -gt 200 ]; then
  REPS=${REPS:-2} bash scripts/write_install.sh "$kit/strata" "$res/write_install" \
    >"$res/write_install.txt" 2>&1
fi
mkdir -p "$OUT"
tar -czf "$OUT/device-results.tar.gz" -C "$res" .
cat "$res/scaling.txt" "$res/write_install.txt" 2>/dev/null | tail -n 60
RUN
chmod +x "$kit/run.sh"
du -sh "$kit"
ls -la "$kit" "$kit/lib"
