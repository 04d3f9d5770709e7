"""Progress lines, stamped with the wall clock so a window can be found in other logs."""
import time


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)
