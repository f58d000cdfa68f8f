"""What a scan keeps between runs, and when it reuses it: the one caching layer, in the shell.

The pure functions (the resolver, the detectors, the blast radius) know nothing
of it. Here they are wrapped: closures kept in a snapshot and read again only
where the graph changed (``incremental``, with the links a change is followed
by in ``links``, ``incoming`` and ``links_db``, and the bodies in ``packs``,
decoded when first read, ``closures``), verdicts kept while what they read is
the same (``verdicts``), and the schema baselines drift is judged against
(``baselines``). ``snapshots`` is the store that keeps them in RECALL_HOME.
"""
