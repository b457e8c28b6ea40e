"""What runs a jitted call: the cache of guarded entries (cache.py: JittedFunction, JittedModule)."""
