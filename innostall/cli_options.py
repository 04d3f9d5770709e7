"""The command line's shared parts: argument types, and the server a command traces."""
from __future__ import annotations

import argparse
import math


def number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")


def positive(text: str) -> float:
    value = number(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def seconds_or_none(text: str) -> float:
    """A finite number of seconds, 0 or more (0: none, as record --patience 0 never waits)."""
    value = number(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds: {text!r}")
    return value


def seconds_at_least(least: float):
    """A positive, finite number of seconds, not under least (the loader counts whole ms,
    and a shorter interval or duration would round to nothing)."""
    def parse(text: str) -> float:
        value = positive(text)
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least:g} s: {text!r}")
        return value
    return parse


SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def size(text: str) -> int:
    """A size in bytes: '500M', '2G', '1.5G', '4096' (K, M, G, T in powers of 1024)."""
    number, unit = text[:-1], text[-1:].upper()
    if unit not in SIZE_UNITS:  # a plain number of bytes (or no size at all)
        number, unit = text, ""
    try:
        value = float(number) * SIZE_UNITS[unit]
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a size (such as 500M or 2G): {text!r}")
    if value < 2**20:
        raise argparse.ArgumentTypeError(f"must be at least 1M: {text!r}")
    return int(value)


def add_target_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--pid", type=int, help="a running mysqld/mariadbd")
    group.add_argument("--binary", help="a server executable (traces every process running it)")
    parser.add_argument("--debuginfo", metavar="PATH",
                        help="separate debug file (or directory) with the server's symbols")


def resolve_target(args):
    from innostall.collector.discovery import target

    if args.pid is not None:
        return target.from_pid(args.pid, args.debuginfo)
    return target.from_binary(args.binary, args.debuginfo)


def loopback(addr: str) -> bool:
    """Whether an address to listen on is this host's alone."""
    import ipaddress

    try:
        return ipaddress.ip_address(addr.strip("[]")).is_loopback
    except ValueError:
        return addr == "localhost"


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}")
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"not a port number (1-65535): {text!r}")
    return value
