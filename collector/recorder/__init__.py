"""Recording: the loop that reads the loader's snapshots, journals them with the server's
context, and writes the recording's tables at idle priority."""
