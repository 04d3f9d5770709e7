#!/usr/bin/env bash
# Install what innostall needs on Debian 12, as root. Idempotent; silent on success,
# one line naming the failed step otherwise. Logs go to build/setup.log.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
mkdir -p "$build"
log=$build/setup.log
: > "$log"

step() {  # step NAME CMD... : run CMD, quiet unless it fails
  local name=$1; shift
  if ! "$@" >>"$log" 2>&1; then
    echo "setup: step '$name' failed (see $log)" >&2
    exit 1
  fi
}

# libncurses5: the MariaDB 10.2.11 client; mariadb-client-core: a client for MySQL 8.0.15,
# whose jar ships mysqld alone; openssl: the MariaDB 11.4.5 fixture's TLS certificate;
# mariadb-server-core: Debian's stripped mariadbd, the real "no symbols" case in the tests;
# chromium, chromium-driver: the headless browser the HTML report is tested in;
# debootstrap: the Debian sid root the mysql-9.7.4 fixture runs in; golang-go: `go tool pprof`,
# which the tests read exported pprof profiles with; percona-toolkit: pt-fingerprint, which
# tests/pure/test_fingerprint.py compares our statement fingerprints with; libfuse3-dev, fuse3:
# scripts/slow_fs.c, the file system with read latency under scripts/slow-fs-server.sh's server.
debs=(clang llvm libbpf-dev bpftool bpftrace libelf-dev zlib1g-dev pkg-config make gcc
      sysbench libaio1 libnuma1 libncurses6 libncurses5 mariadb-client-core mariadb-server-core openssl maven
      python3 python3-venv python3-pip binutils unzip chromium chromium-driver debootstrap golang-go
      percona-toolkit libfuse3-dev fuse3)

# inferno-flamegraph (from the Rust crate registry) draws the SVG flame graphs. 0.11.13 with its lockfile
# builds with Debian 12's rustc 1.63 as well as with current ones; so does dwarf-layouts (ours,
# with its Cargo.lock), which reads struct layouts from the server's DWARF.
inferno_version=0.11.13
speedscope_version=1.25.0

need_debs() {
  local missing=()
  for p in "${debs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

mount_tracefs() {  # bpftrace needs tracefs to detach its probes
  [ -e /sys/kernel/tracing/uprobe_events ] && return 0
  mount -t tracefs nodev /sys/kernel/tracing
}

python_env() {
  [ -x "$build/venv/bin/python" ] || python3 -m venv "$build/venv" || return 1
  # Reinstall only when the project metadata changed since the last install.
  local stamp=$build/venv/.installed
  if [ ! -f "$stamp" ] || [ "$top/pyproject.toml" -nt "$stamp" ]; then
    "$build/venv/bin/pip" install -q --upgrade pip &&
      "$build/venv/bin/pip" install -q -e "${top}[test]" && touch "$stamp"
  fi
}

find_cargo() {  # rustup's cargo (maybe not on a non-login PATH), else Debian's, installed now
  local cargo
  for cargo in "$(command -v cargo)" "$HOME/.cargo/bin/cargo"; do
    [ -x "$cargo" ] && { echo "$cargo"; return 0; }
  done
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends cargo >&2 &&
    echo /usr/bin/cargo
}

run_cargo() {  # run_cargo SUBCOMMAND ARGS...
  local cargo minor
  cargo=$(find_cargo) || return 1
  minor=$("$cargo" --version | sed -n 's/^cargo 1\.\([0-9]*\).*/\1/p')
  if [ "${minor:-0}" -lt 68 ]; then
    # Debian 12's cargo 1.65 reads the crate registry's index through git; the sparse
    # index over HTTPS is an unstable feature there, enabled for this one command.
    RUSTC_BOOTSTRAP=1 "$cargo" -Z sparse-registry "$@"
  else
    "$cargo" "$@"
  fi
}

inferno() {  # into build/tools/bin; a stamp, as 0.11 has no --version to ask
  local tools=$build/tools
  local stamp=$tools/.inferno-$inferno_version
  [ -f "$stamp" ] && [ -x "$tools/bin/inferno-flamegraph" ] && return 0
  run_cargo install --quiet --locked --root "$tools" --version "$inferno_version" inferno &&
    touch "$stamp"
}

dwarf_layouts() {  # the struct-layout reader (collector/discovery/dwarf-layouts), into build/tools/bin
  local crate=$top/collector/discovery/dwarf-layouts out=$build/tools/bin/dwarf-layouts
  # rebuilt when a source is newer than the binary; cargo alone would do it too, but costs a
  # second per `make build` even with nothing to do
  [ -x "$out" ] && [ -z "$(find "$crate/src" "$crate/Cargo.toml" "$crate/Cargo.lock" -newer "$out")" ] &&
    return 0
  run_cargo build --quiet --release --locked --manifest-path "$crate/Cargo.toml" \
      --target-dir "$build/cargo" &&
    install -D -m 755 "$build/cargo/release/dwarf-layouts" "$out"
}

speedscope_schema() {  # the file format's JSON schema, from the npm package, for the export test
  local dir=$build/tools/speedscope tmp
  [ -f "$dir/file-format-schema.json" ] && return 0
  command -v npm >/dev/null || return 0  # optional: the test then checks the structure alone
  tmp=$(mktemp -d) && mkdir -p "$dir" &&
    (cd "$tmp" && npm pack --silent "speedscope@$speedscope_version" >/dev/null &&
     tar xzf "speedscope-$speedscope_version.tgz" package/dist/release/file-format-schema.json) &&
    mv "$tmp/package/dist/release/file-format-schema.json" "$dir/"
  local rc=$?
  rm -rf "$tmp"
  return $rc
}

[ "$(id -u)" -eq 0 ] || { echo "setup: must run as root (uprobes and BPF need it)" >&2; exit 1; }
step "install Debian packages" need_debs
step "mount tracefs" mount_tracefs
step "create Python environment" python_env
step "install inferno $inferno_version (cargo)" inferno
step "build dwarf-layouts (cargo)" dwarf_layouts
step "fetch speedscope $speedscope_version's file format schema (npm)" speedscope_schema
