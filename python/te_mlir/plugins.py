"""The compiler plugins of te_mlir's shared Jit (te_mlir.default_jit()), or
of the Jit given: those NVTE_PLUGIN and Jit.load_plugins listed, whether
each is available, active or failed, and why it failed."""

__all__ = ["info"]


def info(jit=None):
    """One dict per listed plugin, in priority order: spec and source (as
    listed, and where: NVTE_PLUGIN, te_compiler_load_plugins, ...), state
    ("available", "active": started for a compile, or "failed"), name,
    version and library (once known), failure ("<step>: <error>" for a
    failed plugin, else None) and providers ({provider: [te ops]})."""
    from . import default_jit
    plugins = []
    for line in (jit or default_jit())._core.plugin_states().splitlines():
        (spec, source, state, name, version, library, failure,
         providers) = line.split("\t")
        taken = {}
        for entry in filter(None, providers.split("; ")):
            provider, _, ops = entry.partition(": ")
            taken[provider] = ops.split()
        plugins.append({"spec": spec, "source": source, "state": state,
                        "name": name or None, "version": version or None,
                        "library": library or None,
                        "failure": failure or None, "providers": taken})
    return plugins
