"""Offline analysis of recordings: pandas tables, reports."""
