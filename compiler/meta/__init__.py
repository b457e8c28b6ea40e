"""Op metadata: every op's meta function runs the real torch op on meta tensors (functions.py), with a cache of
meta results (cache.py), fake-tensor runs where meta tensors cannot tell (fake.py), and the loaders that keep
torch's Python meta kernels from importing torch._dynamo and sympy on the first call (lazy_*.py)."""
