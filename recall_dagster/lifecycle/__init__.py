"""From a failing dbt test to a resolved incident: blast radius, blind window, retrain gate, postmortem.

Pure core (``blast``, ``window``, ``verdict``, ``assess``,
``incidents``, ``postmortem``, ``retrain_gate``) over plain values; thin readers over
the graph port (``read``); the entry points the CLI and Dagster share
(``service``); writes through the write-back's emitter (``publish``).

The package imports none of them: importing the pure core must not load the readers and writers.
"""
