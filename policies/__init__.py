"""Policies of this config repository, named ``policies.<module>:<Class>`` in _CONFIG_STORE."""
