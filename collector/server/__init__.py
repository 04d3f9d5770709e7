"""The server's own word: SQL queries over its socket, and the names of read views and latches
read from its memory."""
