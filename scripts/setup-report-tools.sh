#!/usr/bin/env bash
# Install the tools behind the offline report views, as root on Debian 12. Idempotent;
# silent on success, one line naming the failed step otherwise. Logs go to
# build/setup-report-tools.log.
#   inferno-flamegraph  (crates.io "inferno", pinned): flame graph SVGs, into build/tools/bin
#   chromium, chromium-driver (Debian): the headless browser the HTML report is tested in
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
inferno_version=0.12.8
mkdir -p "$build"
log=$build/setup-report-tools.log
: > "$log"

step() {  # step NAME CMD... : run CMD, quiet unless it fails
  local name=$1; shift
  if ! "$@" >>"$log" 2>&1; then
    echo "setup-report-tools: step '$name' failed (see $log)" >&2
    exit 1
  fi
}

browser_debs() {
  local missing=()
  for p in chromium chromium-driver; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

inferno() {
  local tools=$build/tools
  "$tools/bin/inferno-flamegraph" --version 2>/dev/null | grep -qF "$inferno_version" && return 0
  # rustup puts cargo in ~/.cargo/bin, which a non-login shell (make, CI) may not have on PATH
  local cargo
  cargo=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
  "$cargo" install --quiet --locked --root "$tools" --version "$inferno_version" inferno
}

[ "$(id -u)" -eq 0 ] || { echo "setup-report-tools: must run as root (apt-get)" >&2; exit 1; }
step "install chromium and chromium-driver" browser_debs
step "install inferno $inferno_version (cargo)" inferno
