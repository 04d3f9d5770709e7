"""The recording format, the one place writer and reader agree: the measurement schema, the
journal's records and the tables built from them. Imports no stage of the pipeline."""
