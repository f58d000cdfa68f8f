"""Write Recall's diagnosis back into DataHub: the only room that writes.

Five write paths, each planned as whole-aspect MCPs with deterministic URNs and
sent through the graph port: assertions (with a run event per scan),
structured properties, tier tags, incidents and pre-mortem documents.  Local
evidence is written first; failed writes are retried with backoff, and run
events that still fail wait for the next scan.
"""
