# innostall: build the BPF object and its loader, run the demo, the tests and the benchmark.
# Every target installs what it needs first (scripts/setup.sh is idempotent and quiet).
BUILD      ?= $(CURDIR)/build
VENV       := $(BUILD)/venv
CLANG      ?= clang
BPFTOOL    ?= bpftool
CFLAGS     ?= -O2 -g -Wall
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -I$(BUILD) -Iprobes
BPF_SRCS   := $(wildcard probes/*.bpf.c)
BPF_OBJS   := $(patsubst probes/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
LOADER     := $(BUILD)/innostall-loader

.PHONY: all setup build test demo bench clean
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

$(LOADER): collector/loader.c probes/innostall.h $(BUILD)/innostall.skel.h
	$(CC) $(CFLAGS) -I$(BUILD) -Iprobes $< -o $@ $$(pkg-config --libs --static libbpf 2>/dev/null || echo -lbpf -lelf -lz)

test: build
	$(VENV)/bin/python -m pytest -q tests

demo: build
	@BUILD=$(BUILD) scripts/demo.sh

clean:
	rm -rf $(BUILD)/bpf $(BUILD)/*.o $(BUILD)/*.skel.h $(BUILD)/vmlinux.h $(LOADER)
