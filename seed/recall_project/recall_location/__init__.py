"""The demo workspace's ``recall`` location, declared as a team declares Recall: a ``RecallComponent``."""
