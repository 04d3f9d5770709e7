#!/usr/bin/env bash
# Split a fixture server binary the way distros ship it: a stripped executable with a
# .gnu_debuglink, and its symbols in a separate .debug file. Cached; prints the output dir.
#
# usage: scripts/split-debuginfo.sh SERVER
# Output, under build/fixtures/split-SERVER/:
#   debug/NAME.debug             the symbols (objcopy --only-keep-debug)
#   bare/NAME                    stripped, debuglink set, no debug file anywhere near it
#   linked/NAME, linked/.debug/  the same, with the debug file where the debuglink finds it
#   nobuildid/NAME               stripped and without a build-id: matched by debuglink CRC
set -u
top=$(cd "$(dirname "$0")/.." && pwd -P)
build=${BUILD:-$top/build}
server=${1:?usage: $0 SERVER}
fx=$build/fixtures/$server
out=$build/fixtures/split-$server

die() { echo "split-debuginfo: $*" >&2; exit 1; }

"$top/scripts/fixture.sh" "$server" fetch || exit 1
exe=$(ls "$fx"/dist/bin/mariadbd "$fx"/dist/bin/mysqld 2>/dev/null | head -1)
name=$(basename "$exe")
if [ ! -f "$out/nobuildid/$name" ]; then
  rm -rf "$out" && mkdir -p "$out"/{debug,bare,linked/.debug,nobuildid} || die "cannot create $out"
  objcopy --only-keep-debug "$exe" "$out/debug/$name.debug" || die "objcopy --only-keep-debug failed"
  strip --strip-all -o "$out/bare/$name.tmp" "$exe" || die "strip failed"
  (cd "$out/debug" && objcopy --add-gnu-debuglink="$name.debug" "$out/bare/$name.tmp" "$out/bare/$name") ||
    die "objcopy --add-gnu-debuglink failed"
  ln "$out/bare/$name" "$out/linked/$name" && ln "$out/debug/$name.debug" "$out/linked/.debug/$name.debug" ||
    die "cannot link the copies"
  objcopy --remove-section=.note.gnu.build-id "$out/bare/$name" "$out/nobuildid/$name" ||
    die "cannot remove the build-id"
  rm -f "$out/bare/$name.tmp"
fi
echo "$out"
