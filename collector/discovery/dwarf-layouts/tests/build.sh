#!/bin/sh
# Builds the test binaries: DWARF 4/5, gcc/clang, type units, compressed sections, a
# split debug file, dwz'd. Output in ./out/.
set -e
cd "$(dirname "$0")"; mkdir -p out
for cc in g++ clang++; do
  for v in 4 5; do
    [ "$cc" = g++ ] && n=g-dw$v || n=clang-dw$v
    $cc -O1 -gdwarf-$v -std=c++17 a.cc b.cc -o out/$n
    $cc -O1 -gdwarf-$v -std=c++17 -fdebug-types-section a.cc b.cc -o out/$n-tu
    $cc -O1 -gdwarf-$v -std=c++17 -gz=zlib a.cc b.cc -o out/$n-gz
  done
done
g++ -O1 -gdwarf-2 -gstrict-dwarf -std=c++17 a.cc b.cc -o out/g-dw2
# zstd-compressed debug sections, when objcopy knows zstd
objcopy --compress-debug-sections=zstd out/g-dw5 out/g-dw5-zstd 2>/dev/null || true
# a split debug file found through .gnu_debuglink
mkdir -p out/split/.debug
objcopy --only-keep-debug out/g-dw5 out/split/.debug/prog.debug
objcopy --strip-debug --add-gnu-debuglink=out/split/.debug/prog.debug out/g-dw5 out/split/prog
if command -v dwz >/dev/null; then cp out/g-dw4 out/g-dw4-dwz && dwz out/g-dw4-dwz; fi
ls out
