#!/usr/bin/env bash
# Packs what the lent 16-core machine needs for issue 42's scaling checks
# into results/device-kit/ (ignored by git; name it in the device tool's
# `carry`), because that machine reaches nothing: no crates to build
# from, no CCBench to clone.
#
#   usage: scripts/device-kit.sh
#   env:   CCBENCH (/tmp/ccbench): a CCBench tree built as below; when
#          its silo.exe and tpcc_silo binaries are there, they go in the
#          kit (the static builds when there are, else the dynamic ones
#          with the shared libraries they load, behind a wrapper), else
#          the kit is Strata's alone
#
# CCBench (2026-11-30, Debian 12, GCC 12): sources and packages as
# ccbench-vs-strata.sh's header says (ccbench a4d4633, its three
# third_party commits), then, with -j2 (its bootstrap.sh runs make -j):
#   cd $CCBENCH/third_party/masstree && ./bootstrap.sh && ./configure --disable-assertions &&
#     make clean && make -j2 CXXFLAGS='-g -W -Wall -O3 -fPIC' &&
#     ar cr libkohler_masstree_json.a json.o string.o straccum.o str.o msgpack.o clp.o \
#       kvrandom.o compiler.o memdebug.o kvthread.o misc.o && ranlib libkohler_masstree_json.a
#   cd $CCBENCH/third_party/mimalloc && mkdir -p out/release && cd out/release &&
#     cmake -DCMAKE_BUILD_TYPE=Release ../.. && make -j2
#   sed -i 's/-DKVS_NUMBER_OF_LOGICAL_CORES=${cores}/-DKVS_NUMBER_OF_LOGICAL_CORES=64/' \
#     $CCBENCH/tpcc_silo/CMakeLists.txt   # built for 2 cores it crashes at 3+ threads
#   static (no library to carry; needs glibc >= 2.36 there, as Strata's binary does):
#   S="-Dgflags_LIBRARY_FILE=/usr/lib/x86_64-linux-gnu/libgflags.a"
#   L="-DCMAKE_EXE_LINKER_FLAGS=-static-libstdc++ -static-libgcc"
#   cd $CCBENCH/silo && mkdir -p build-static && cd build-static &&
#     cmake -DCMAKE_BUILD_TYPE=Release -DVAL_SIZE=80 -DCMAKE_CXX_FLAGS=-w "$S" "$L" .. && make -j2 silo.exe
#   cd $CCBENCH/tpcc_silo && mkdir -p build-static && cd build-static &&
#     cmake -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-w "$S" "$L" .. && make -j2 silo.exe
#   (the same without "$S" "$L", in build/, gives the dynamic ones)
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
# tpcc_silo built for fewer cores than the device has crashes there.
flags="$cc/tpcc_silo/build-static/CMakeFiles/silo.exe.dir/flags.make"
[ -f "$flags" ] || flags="$cc/tpcc_silo/build/CMakeFiles/silo.exe.dir/flags.make"
if [ -f "$flags" ] && ! grep -q 'KVS_NUMBER_OF_LOGICAL_CORES=64' "$flags"; then
  echo "tpcc_silo was not built with KVS_NUMBER_OF_LOGICAL_CORES=64 (see above)" >&2
  exit 1
fi
for name in silo tpcc_silo; do
  b="$cc/$name/build-static/silo.exe"
  [ -x "$b" ] || b="$cc/$name/build/silo.exe"
  [ -x "$b" ] || continue
  dest="$kit/$name"
  [ "$name" = silo ] && dest="$kit/silo.exe"
  # The libraries it loads that a bare machine may lack (gflags, the C++
  # runtime), not the C library's own.
  libs=$(ldd "$b" | awk '/=> \// {print $3}' |
    grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux)[.-]' || true)
  if [ -z "$libs" ]; then
    strip -o "$dest" "$b"
    continue
  fi
  # A dynamic build: its libraries beside it, found through a wrapper,
  # so that nothing else on the device loads them.
  strip -o "$dest.bin" "$b"
  for l in $libs; do cp -L "$l" "$kit/lib/"; done
  printf '#!/bin/sh\nd=$(dirname "$0")\nLD_LIBRARY_PATH="$d/lib" exec "$d/%s" "$@"\n' \
    "$(basename "$dest.bin")" >"$dest"
  chmod +x "$dest"
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
