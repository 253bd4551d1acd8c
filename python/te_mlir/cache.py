"""The kernel caches of te_mlir's shared Jit (te_mlir.default_jit()), or of
the Jit given: the modules it keeps loaded, and the disk cache
(TE_CACHE_DIR) that every process shares."""

__all__ = ["clear", "info"]


def info(jit=None):
    """What the caches hold (see Jit.cache_info)."""
    from . import default_jit
    return (jit or default_jit()).cache_info()


def clear(disk=True, jit=None):
    """Empties the memory cache and, with `disk`, the disk cache's entries
    (see Jit.clear_cache); on the shared Jit, te_mlir.ops's loaded
    programs too."""
    from . import default_jit
    (jit or default_jit()).clear_cache(disk)
