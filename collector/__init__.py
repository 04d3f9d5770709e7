"""The collector, one folder per stage, in the order data flows:

    discovery/  the running server -> its binary, symbols, debug files and the catalog's probes
    server/     what the server says of itself: SQL, and names read from its memory
    loader/     the C loader: attaches the BPF programs, the cost governor, calibration
    recorder/   the recording loop: journal, live line, idle-priority work, the tables

A module imports only its own stage and earlier ones (tests/test_layering.py)."""
