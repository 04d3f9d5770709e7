"""Discovery (binary -> resolved probes), attach (the BPF loader) and recording."""
