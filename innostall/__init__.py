"""innostall: why InnoDB purge falls behind and where latches stall."""
__version__ = "0.1.0"
