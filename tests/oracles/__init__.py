"""Independent test oracles: Python re-statements of formulas whose only production home is the
Flink job (stream-jobs/). Production code must not import these; tests compare the Java results
(or golden seed figures) against them."""
