"""Offline analysis of recordings: pandas tables, reports."""


def __getattr__(name: str):
    """load_frames, the one-call helper (innostall.analysis.load_frames), imported on first
    use: pandas stays out of processes that only need a light module of the package."""
    if name == "load_frames":
        from .dataframes import load_frames
        return load_frames
    raise AttributeError(name)
