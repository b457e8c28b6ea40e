"""The compiler's core: the objects every layer speaks in (proxies, symbols, traces, the tracing context, errors,
events, source locations, pytree helpers). It imports nothing of the compiler above it (compiler/core/README.md)."""
