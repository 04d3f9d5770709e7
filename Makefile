# innostall: build the BPF object and its loader, run the demo, the tests and the benchmark.
# Every target installs what it needs first (scripts/setup.sh is idempotent and quiet).
BUILD      ?= $(CURDIR)/build
VENV       := $(BUILD)/venv
CLANG      ?= clang
BPFTOOL    ?= bpftool
CFLAGS     ?= -O2 -g -Wall
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -I$(BUILD) -Iprobes
BPF_SRCS   := $(wildcard probes/*.bpf.c)
BPF_OBJS   := $(patsubst probes/%.bpf.c,$(BUILD)/bpf/%.bpf.o,probes/common.bpf.c $(filter-out probes/common.bpf.c,$(BPF_SRCS)))  # the one defining the shared maps first
LOADER     := $(BUILD)/innostall-loader

.PHONY: all setup build check test demo bench soak bench-layouts dist dist-check clean
.DELETE_ON_ERROR:

all: build

setup:
	@BUILD=$(BUILD) scripts/setup.sh

build: setup $(LOADER)

$(BUILD)/vmlinux.h:
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(BUILD)/bpf/%.bpf.o: probes/%.bpf.c probes/*.h $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# One object from all measurements: they share maps, linked by bpftool's static linker.
$(BUILD)/innostall.bpf.o: $(BPF_OBJS)
	$(BPFTOOL) gen object $@ $^

$(BUILD)/innostall.skel.h: $(BUILD)/innostall.bpf.o
	$(BPFTOOL) gen skeleton $< name innostall_bpf > $@

LOADER_SRCS := $(addprefix collector/loader/,loader.c json_output.c table_output.c changed_rows.c trace_helpers.c governor.c budget.c charges.c \
               attacher.c calibrate.c uprobe.c read_views.c run_time.c state_signals.c)
$(LOADER): $(LOADER_SRCS) collector/loader/*.h probes/innostall.h probes/innostall_tables.h $(BUILD)/innostall.skel.h
	$(CC) $(CFLAGS) -I$(BUILD) -Iprobes -Icollector/loader $(LOADER_SRCS) -o $@ \
		$$(pkg-config --libs --static libbpf 2>/dev/null || echo -lbpf -lelf -lz) -lm -lpthread

$(BUILD)/bench-yardstick: scripts/bench/yardstick.c
	$(CC) $(CFLAGS) $< -o $@

# The release artifact for hosts without a compiler (docs/install.md, "Release artifact"): a wheel with
# this loader, linked statically (libbpf, libelf, zlib, glibc), as package data.
DIST_LOADER := $(BUILD)/dist/innostall-loader
$(DIST_LOADER): $(LOADER_SRCS) collector/loader/*.h probes/innostall.h probes/innostall_tables.h $(BUILD)/innostall.skel.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -static -s -I$(BUILD) -Iprobes -Icollector/loader $(LOADER_SRCS) -o $@ -lbpf -lelf -lz -lm -lpthread

dist: build $(DIST_LOADER)
	@BUILD=$(BUILD) scripts/dist.sh

# Installs the wheel in fresh Debian 12 and 13 roots (no compiler, no make, no kernel headers)
# and records a fixture server from there. Not part of make test: 3-6 minutes (docs/install.md).
dist-check: dist
	@BUILD=$(BUILD) scripts/dist-check.sh

# tests/pure/ spread over the cores first (the browser's and the fuzz's 200 hostile recordings
# included: none shares a server or a file), then tests/live/ one at a time: they share the
# fixture servers and time their loads. The folder is the marker (tests/conftest.py).
test: build
	$(VENV)/bin/python -m pytest -q -n auto tests/pure
	$(VENV)/bin/python -m pytest -q --durations=15 tests/live

# tests/pure/ but the heavy ones (no server, no root, no browser, no Go; 20 hostile recordings):
# the catalog lint, the views, the maths, spread over the machine's cores (pytest-xdist). A
# pure test over a second of CPU fails (tests/conftest.py, SLOW_PURE). Bytecode is cached under
# build/pycache even where the environment turns the cache off (PYTHONDONTWRITEBYTECODE): each
# worker compiled every module and rewrote every test's asserts again, ~2 s of CPU a worker.
check: build
	PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(BUILD)/pycache $(VENV)/bin/python -m pytest -q -n auto -m "not heavy" tests/pure

demo: build
	@BUILD=$(BUILD) scripts/demo.sh

# The overhead benchmark: writes bench/results/latest.json and bench/results/latest.md (BENCH_* env vars shorten
# it; python -m bench --help lists them). scripts/ holds the bench package and fixture_servers.py.
bench: build $(BUILD)/bench-yardstick
	BUILD=$(BUILD) PYTHONPATH=$(CURDIR)/scripts $(VENV)/bin/python -m bench

# The soak of issue 30: one recording of SOAK_MINUTES (60) under the steady load, its disk, memory
# and CPU every 10 minutes, then the report's time; soak.md and soak.json beside the recording.
SOAK_DIR ?= $(BUILD)/soak/$(shell date +%Y-%m-%d-%H%M)
soak: build
	BUILD=$(BUILD) PYTHONPATH=$(CURDIR)/scripts $(VENV)/bin/python -m bench.soak $(SOAK_DIR)

# How long the struct layouts take to read from a build's DWARF, first and cached (a minute).
bench-layouts: build
	PYTHONPATH=$(CURDIR)/scripts $(VENV)/bin/python -m bench.layouts

clean:
	rm -rf $(BUILD)/dist $(BUILD)/bpf $(BUILD)/*.o $(BUILD)/*.skel.h $(BUILD)/vmlinux.h $(LOADER)
